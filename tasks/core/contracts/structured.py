"""Structured output (docs/requirements.md 2.3): the WHOLE reply parses as JSON and validates.

Reasons: `fenced_json` (a ```json fence around it: fail, the client would choke too), `invalid_json` (does not
parse, prose around it, empty), `schema_violation` (with the failing path, e.g. `$.age: '40' is not of type
'integer'`), `content_filter` (a filter ended it: fail). Not quality: a cut stream or any transport error is
`transport`; finish_reason `length` with broken JSON is `inconclusive` `truncated` (the budget, not the
model, ended it), and so is broken JSON that our own text cap cut (`text_capped`). A 200 that was not an
event stream or did not decode is `fail` `protocol_violation`, an upstream failure reported as success is `fail`
`upstream_error` (both checked first); broken decoding in the reply is `fail` `encoding_corruption`.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for
from referencing import Registry

from tasks.config import CanaryConfig
from tasks.core.contracts.common import encoding_judgement, exchange_judgement, exchange_override, judge_each
from tasks.core.contracts.spec import ContractSpec
from tasks.core.prompts import STRUCTURED_MAX_TOKENS, structured_body
from tasks.core.types import Attempt, Contract, Judgement, Outcome, Reason

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
EVIDENCE_MAX_CHARS = 200


def default_schema() -> dict[str, Any]:
    from tasks.core.prompts import STRUCTURED_SCHEMA

    return STRUCTURED_SCHEMA


def json_path(parts: Sequence[Any]) -> str:
    """jsonschema's absolute_path as `$.a.b[2]`."""
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _one_line(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= EVIDENCE_MAX_CHARS else s[: EVIDENCE_MAX_CHARS - 1] + "…"


#: Compiled validators kept (least recently used dropped first): the probe's few constant schemas, and the
#: schemas of the router's live traffic (provider_canary/router/answer.py interns each distinct schema to one object).
MAX_VALIDATORS = 256
_VALIDATORS: OrderedDict[int, tuple[Mapping[str, Any], Any]] = OrderedDict()
#: `$ref`s resolve inside the schema (and jsonschema adds the metaschemas) only: never fetched from a URL or a
#: file (jsonschema's default registry would `urlopen` a remote `$ref`, and the router validates schemas its
#: clients send). An unresolvable `$ref` raises, which the caller treats as "cannot judge".
_NO_RETRIEVAL: Registry[Any] = Registry()


def _validator(schema: Mapping[str, Any]) -> Any:
    """The validator of `schema`, built once per schema object (a validator costs more to build than to run).
    Keyed by identity, so a schema must not change after use; at most `MAX_VALIDATORS` are kept."""
    key = id(schema)
    kept = _VALIDATORS.get(key)
    if kept is None or kept[0] is not schema:
        kept = _VALIDATORS[key] = (schema, validator_for(schema)(schema, registry=_NO_RETRIEVAL))
        while len(_VALIDATORS) > MAX_VALIDATORS:
            _VALIDATORS.popitem(last=False)
    _VALIDATORS.move_to_end(key)
    return kept[1]


def schema_error(instance: Any, schema: Mapping[str, Any]) -> str | None:
    """`$.path: message` of the most relevant violation, or None when the instance validates."""
    validator = _validator(schema)
    if validator.is_valid(instance):
        return None
    err = best_match(validator.iter_errors(instance))
    return None if err is None else _one_line(f"{json_path(list(err.absolute_path))}: {err.message}")


def _prose_around(text: str) -> str | None:
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        _, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError:
        return None
    return f"prose around JSON ({start} chars before, {len(text) - end} after)"


def judge_attempt(a: Attempt, schema: Mapping[str, Any]) -> Judgement:
    broken_protocol = exchange_override(a)
    if broken_protocol is not None:
        return broken_protocol
    if a.finish_reason == "content_filter" and a.error_class is None:
        return Judgement(Outcome.FAIL, Reason.CONTENT_FILTER, "finish_reason (content_filter)")
    broken = exchange_judgement(a)
    if broken is not None:
        return broken
    corrupted = encoding_judgement(a.text)
    if corrupted is not None:
        return corrupted
    text = a.text.strip()
    if not text:
        return Judgement(Outcome.FAIL, Reason.INVALID_JSON, f"empty reply, finish_reason ({a.finish_reason})")
    fenced = _FENCE.match(text)
    if fenced:
        return Judgement(
            Outcome.FAIL, Reason.FENCED_JSON, _one_line(f"reply wrapped in ``` fences: {text[:40]!r}")
        )
    try:
        instance = json.loads(text)
    except json.JSONDecodeError as exc:
        if a.finish_reason == "length":
            return Judgement(
                Outcome.INCONCLUSIVE, Reason.TRUNCATED, f"finish_reason (length), JSON cut at char {exc.pos}"
            )
        if a.text_truncated:
            return Judgement(
                Outcome.INCONCLUSIVE, Reason.TEXT_CAPPED, f"text capped at chars ({len(a.text)})"
            )
        detail = _prose_around(text) or f"{exc.msg} at char {exc.pos}"
        return Judgement(Outcome.FAIL, Reason.INVALID_JSON, _one_line(f"{detail}: {text[:40]!r}"))
    violation = schema_error(instance, schema)
    if violation is not None:
        return Judgement(Outcome.FAIL, Reason.SCHEMA_VIOLATION, violation)
    return Judgement(Outcome.PASS, Reason.OK, f"valid JSON against schema, text_chars ({len(text)})")


def judge(
    attempts: Sequence[Attempt], cfg: CanaryConfig, *, schema: Mapping[str, Any] | None = None
) -> Judgement:
    resolved = default_schema() if schema is None else schema
    return judge_each(attempts, lambda a: judge_attempt(a, resolved))


#: Strict structured output: no temperature (`require_parameters` would filter endpoints on it).
SPEC = ContractSpec(
    name=Contract.STRUCTURED,
    judge=judge,
    body=structured_body,
    max_tokens=STRUCTURED_MAX_TOKENS,
    require_parameters=True,
    hard_by_default=True,
)
