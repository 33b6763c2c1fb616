"""An answer the router passes, read and judged with the canary's own pure judges (sans I/O, no clock).

`AnswerReader` folds what an upstream answered (the events of a stream as the relay's gate read them,
provider_canary/router/stream.py `Frame`, or the JSON body of a non-streamed answer) into the canary's own record of an
exchange, `tasks.core.types.Attempt`, so the canary's judges apply to it unchanged. `expectations(body)` reads
what the client's request asked for (its `tools`, its `response_format`). `check(attempt, expected)` then
gives one `CheckResult` per quality class that applies (`tasks.core.live_records.LiveQuality`), each with the
canary's `Reason` value (`ok` for a pass):

    class        judged when                                 fails with (the canary's judge)
    empty        always                                      empty_reply: no content and no tool call, finished
                                                             `stop` (or no reason); `length` and `content_filter`
                                                             say why and are not judged
    tools        the request offered `tools` and the answer  unknown_tool, bad_json_args, schema_violation
                 calls one                                   (tasks/core/contracts/tools.py `call_problem`); a
                                                             call cut by `length` or the cap is not judged
    structured   `response_format` json_schema (valid        invalid_json, fenced_json, schema_violation
                 against it) or json_object (parses), the    (tasks/core/contracts/structured.py `judge_attempt`)
                 answer has text and no tool call
    encoding     the answer has text or tool arguments       encoding_corruption (textscan: U+FFFD, C1 controls,
                                                             mojibake, BPE symbols), then corrupted_opening
                                                             (opening.py, free text only); protocol_violation: a
                                                             stream's frame after its first content that does not
                                                             decode (bytes that are not UTF-8, a broken event)

An exchange that is no answer (an error object, a protocol violation, an upstream failure reported as success:
`tasks.core.classify.exchange_override`) is not judged: it is the attempt's failure. `masked_failure` names
that case for a non-streamed answer: the failover reason (`native_<word>`, `error_in_200_<code>`).

Nothing here keeps, logs or returns answer text: checks are classes and reasons only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import provider_canary.router.reasons as reasons
from provider_canary.router.reasons import FailoverReason
from provider_canary.router.stream import EXPLAINED_EMPTY, Frame
from tasks.core.classify import exchange_override, upstream_failure
from tasks.core.contracts.common import encoding_judgement
from tasks.core.contracts.opening import is_corrupted_opening
from tasks.core.contracts.structured import judge_attempt as judge_structured
from tasks.core.contracts.tools import call_problem
from tasks.core.http_rules import is_try_again_status
from tasks.core.live_records import LiveQuality
from tasks.core.types import Attempt, ErrorClass, Outcome, Reason
from tasks.core.wire.fold import ChunkFold
from tasks.core.wire.sse import BadFrame, Chunk, read_event, split_events

#: Text (and tool arguments) kept per answer for judging, in UTF-8 bytes.
TEXT_CAP_BYTES = 256 * 1024
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The structured judge's failures that are about the JSON (others: encoding, filter, empty are other classes).
STRUCTURED_REASONS = frozenset({Reason.INVALID_JSON, Reason.FENCED_JSON, Reason.SCHEMA_VIOLATION})
_EMPTY_SCHEMA: Mapping[str, Any] = {}


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What one check of a live answer found: its quality class and the canary's reason ("ok": it held)."""

    quality: LiveQuality
    reason: str  # the canary's Reason value: "ok" when the check held

    @property
    def passed(self) -> bool:
        return self.reason == Reason.OK


@dataclass(frozen=True, slots=True)
class Expectations:
    """What the client's request asked for: its tools (name -> parameters schema) and its response format."""

    tools: Mapping[str, Mapping[str, Any]] | None = None
    response_format: str | None = None  # "json_schema" | "json_object"
    schema: Mapping[str, Any] | None = None  # json_schema's schema


NOTHING_EXPECTED = Expectations()


def _identity(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    return schema


def expectations(
    tools: Any, response_format: Any, intern: Callable[[Mapping[str, Any]], Mapping[str, Any]] = _identity
) -> Expectations:
    """The request's `tools` and `response_format` (as the client sent them) as `Expectations`. `intern` maps
    each schema to one shared object per distinct schema (the validator cache is keyed by object)."""
    offered: dict[str, Mapping[str, Any]] | None = None
    if isinstance(tools, list):
        offered = {}
        for tool in tools:
            fn = tool.get("function") if isinstance(tool, Mapping) else None
            name = fn.get("name") if isinstance(fn, Mapping) else None
            if isinstance(name, str) and name:
                params = fn.get("parameters") if isinstance(fn, Mapping) else None
                offered[name] = intern(params) if isinstance(params, Mapping) else _EMPTY_SCHEMA
        offered = offered or None
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    schema: Mapping[str, Any] | None = None
    if kind == "json_schema":
        spec = response_format.get("json_schema") if isinstance(response_format, Mapping) else None
        raw = spec.get("schema") if isinstance(spec, Mapping) else None
        schema = intern(raw) if isinstance(raw, Mapping) else None
        kind = kind if schema is not None else None
    elif kind != "json_object":
        kind = None
    return Expectations(offered, kind, schema)


class AnswerReader(ChunkFold):
    """Folds an answer into an `Attempt` (one per answer; not thread-safe): the probe's fold (tasks/core/wire/
    fold.py) plus the router's fault rules. Feed a stream's frames with `frames` (the gate read them: nothing is
    parsed twice) or its events with `event`, or a whole JSON body with `chunk`. `keep_bytes`: the stream's bytes
    folded at most; past them the answer is `cut` and nothing more is read."""

    def __init__(self, cap_bytes: int = TEXT_CAP_BYTES, keep_bytes: int | None = None) -> None:
        super().__init__(cap_bytes)
        self._room = keep_bytes
        self.error_class: ErrorClass | None = None
        self.error_code: int | None = None
        self.cut = False  # the bytes kept were cut by the router's cap

    def frames(self, frames: Iterable[Frame]) -> None:
        """Events in stream order, with their sizes: folded while they fit in `keep_bytes`."""
        for size, event in frames:
            if self._room is not None:
                if self.cut or size > self._room:
                    self.cut = True
                    return
                self._room -= size
            self.event(event)

    def event(self, event: object) -> None:
        if isinstance(event, Chunk):
            self.chunk(event.data)
        elif isinstance(event, BadFrame) and not self.cut:
            self.error_class = self.error_class or ErrorClass.PROTOCOL

    def chunk(self, doc: Mapping[str, Any]) -> None:
        """One streamed chunk, or a whole non-streamed completion (or error) body."""
        error = self.add(doc)
        if error is not None and self.error_class is None:
            self.error_class, self.error_code = ErrorClass.MIDSTREAM_ERROR, error[0]

    def attempt(self) -> Attempt:
        """What the answer showed, as the canary's record of an exchange (its identity fields are blank)."""
        return Attempt(
            round_id="live", model="", tag="", provider_name="", contract="live", attempt_no=1,
            started_at=_EPOCH, http_status=200, chunk_count=self.chunk_count, finish_reason=self.finish_reason,
            native_finish_reason=self.native_finish_reason, served_provider=self.provider, text=self.text.value(),
            text_truncated=self.cut or self.text.truncated or self.tool_calls.truncated, error_class=self.error_class,
            error_code=self.error_code, tool_calls=self.calls(),
        )


def read_json(doc: Mapping[str, Any]) -> Attempt:
    reader = AnswerReader()
    reader.chunk(doc)
    return reader.attempt()


def read_stream(raw: bytes, *, cut: bool = False) -> Attempt:
    """A stream's bytes folded as the relay folds them: its whole events read as the gate reads them, and a last
    one without its blank line when it reads whole (the gate drops one that does not); `cut`: the bytes are a
    prefix, so that last piece is not read."""
    reader = AnswerReader()
    reader.cut = cut
    events, rest = split_events(raw)
    last = None if cut or not rest.strip() else read_event(rest, first=not events)
    for n, event in enumerate(events):
        reader.event(read_event(event, first=n == 0))
    if last is not None and not isinstance(last, BadFrame):
        reader.event(last)
    return reader.attempt()


def has_output(a: Attempt) -> bool:
    return bool(a.text.strip() or a.tool_calls)


def masked_failure(a: Attempt) -> FailoverReason | None:
    """Why a non-streamed HTTP 200 is no answer, or None: an error object (`error_in_200_<code>`; with content
    only when its code is one to try again), or an upstream failure reported as success (`native_<word>`,
    tasks/core/classify.py `upstream_failure`: the probe's own rule; a partial reply does not save it)."""
    if a.error_class is ErrorClass.MIDSTREAM_ERROR:
        code = a.error_code if a.error_code is not None else 500
        if not has_output(a) or is_try_again_status(code):
            return reasons.error_in_200(code)
        return None
    word = upstream_failure(a)
    return reasons.native(word) if word is not None else None


def is_empty(a: Attempt) -> bool:
    """No content and no tool call, and no finish reason that says why (the `empty` class fails)."""
    return not has_output(a) and a.finish_reason not in EXPLAINED_EMPTY


def _tools_check(a: Attempt, expected: Expectations) -> CheckResult | None:
    if not a.tool_calls or expected.tools is None:
        return None
    for call in a.tool_calls:
        problem = call_problem(call, expected.tools)
        if problem is not None:
            if problem.reason == "bad_json_args" and (a.finish_reason == "length" or a.text_truncated):
                return None  # cut by the budget or the cap: the canary's `truncated`, not judged
            return CheckResult(LiveQuality.TOOLS, problem.reason)
    return CheckResult(LiveQuality.TOOLS, Reason.OK)


def _structured_check(a: Attempt, expected: Expectations) -> CheckResult | None:
    if expected.response_format is None or a.tool_calls or not a.text.strip():
        return None
    schema = expected.schema if expected.schema is not None else _EMPTY_SCHEMA  # json_object: it parses
    judgement = judge_structured(a, schema)
    if judgement.outcome is Outcome.PASS:
        return CheckResult(LiveQuality.STRUCTURED, Reason.OK)
    if judgement.outcome is Outcome.FAIL and judgement.reason in STRUCTURED_REASONS:
        return CheckResult(LiveQuality.STRUCTURED, judgement.reason)
    return None  # truncated, capped, filtered or garbled: another class (or nobody) says it


def _encoding_check(a: Attempt, expected: Expectations) -> CheckResult | None:
    args = [c.arguments for c in a.tool_calls]
    if not a.text.strip() and not any(arg.strip() for arg in args):
        return None
    corrupted = encoding_judgement("\n".join([a.text, *args]) if args else a.text)
    if corrupted is not None:
        return CheckResult(LiveQuality.ENCODING, corrupted.reason)
    free_text = expected.response_format is None and not a.tool_calls
    if free_text and is_corrupted_opening(a.text):
        return CheckResult(LiveQuality.ENCODING, Reason.CORRUPTED_OPENING)
    return CheckResult(LiveQuality.ENCODING, Reason.OK)


def check(a: Attempt, expected: Expectations) -> tuple[CheckResult, ...]:
    """One result per class that applies (module docstring); none for an exchange that is no answer. A stream
    with a frame that does not decode after its first content (the client got it: the relay forwards events as
    they come, and the attempt ended `ok`) fails `encoding` with the probe's `protocol_violation`, and nothing
    else is judged of it."""
    if a.error_class is ErrorClass.PROTOCOL and has_output(a):
        return (CheckResult(LiveQuality.ENCODING, Reason.PROTOCOL_VIOLATION),)
    if a.error_class is not None or exchange_override(a) is not None:
        return ()
    checks: list[CheckResult] = []
    if a.finish_reason not in EXPLAINED_EMPTY or has_output(a):
        checks.append(CheckResult(LiveQuality.EMPTY, Reason.EMPTY_REPLY if is_empty(a) else Reason.OK))
    for rule in (_tools_check, _structured_check, _encoding_check):
        result = rule(a, expected)
        if result is not None:
            checks.append(result)
    return tuple(checks)


#: What the judging says of a stream the gate saw end empty before any output (it failed over, unjudged).
EMPTY_REPLY = (CheckResult(LiveQuality.EMPTY, Reason.EMPTY_REPLY),)

#: The classes whose failure makes a non-streamed answer worth asking the next tier for (router/ROUTES.md).
RETRIED = frozenset({LiveQuality.TOOLS, LiveQuality.STRUCTURED})


def failed_check(checks: tuple[CheckResult, ...]) -> CheckResult | None:
    """The first failed tools or structured result: a non-streamed answer the next tier is asked to redo."""
    return next((v for v in checks if v.quality in RETRIED and not v.passed), None)


def parse_json_answer(body: bytes) -> Mapping[str, Any] | None:
    """A non-streamed answer body as a JSON object, or None (not JSON, too deep, not an object)."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None
