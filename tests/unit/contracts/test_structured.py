"""Structured-output contract: golden table against a schema passed in (no dependency on tasks.core.prompts)."""

from __future__ import annotations

import json

import pytest
from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.contracts import structured
from tasks.core.types import Contract, ErrorClass, Outcome

pytestmark = pytest.mark.unit
CFG = CanaryConfig()
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "mood": {"type": "string", "enum": ["calm", "angry", "sad"]},
        "traits": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "mood", "traits"],
    "additionalProperties": False,
}
GOOD = {"name": "Bren", "age": 52, "mood": "calm", "traits": ["gruff", "loyal"]}
GOOD_TEXT = json.dumps(GOOD)

CASES = [
    ("valid", dict(text=GOOD_TEXT), Outcome.PASS, "ok", "valid JSON"),
    ("valid_with_surrounding_whitespace", dict(text=f"\n  {GOOD_TEXT}\n"), Outcome.PASS, "ok", "valid JSON"),
    (
        "enum_violation",
        dict(text=json.dumps({**GOOD, "mood": "furious"})),
        Outcome.FAIL,
        "schema_violation",
        "$.mood: 'furious' is not one of ['calm', 'angry', 'sad']",
    ),
    (
        "wrong_type",
        dict(text=json.dumps({**GOOD, "age": "52"})),
        Outcome.FAIL,
        "schema_violation",
        "$.age: '52' is not of type 'integer'",
    ),
    (
        "nested_item",
        dict(text=json.dumps({**GOOD, "traits": ["ok", 3]})),
        Outcome.FAIL,
        "schema_violation",
        "$.traits[1]: 3 is not of type 'string'",
    ),
    (
        "missing_key",
        dict(text=json.dumps({k: v for k, v in GOOD.items() if k != "age"})),
        Outcome.FAIL,
        "schema_violation",
        "$: 'age' is a required property",
    ),
    (
        "extra_key",
        dict(text=json.dumps({**GOOD, "hp": 3})),
        Outcome.FAIL,
        "schema_violation",
        "Additional properties are not allowed",
    ),
    ("fenced", dict(text=f"```json\n{GOOD_TEXT}\n```"), Outcome.FAIL, "fenced_json", "fences"),
    ("fenced_no_lang", dict(text=f"```\n{GOOD_TEXT}\n```"), Outcome.FAIL, "fenced_json", "fences"),
    (
        "prose_around",
        dict(text=f"Here is the card: {GOOD_TEXT} Enjoy!"),
        Outcome.FAIL,
        "invalid_json",
        "prose around JSON (18 chars before, 7 after)",
    ),
    ("not_json", dict(text="Bren, 52, calm"), Outcome.FAIL, "invalid_json", "Expecting value at char 0"),
    ("empty", dict(text=""), Outcome.FAIL, "invalid_json", "empty reply"),
    (
        "content_filter",
        dict(text="", finish_reason="content_filter"),
        Outcome.FAIL,
        "content_filter",
        "finish_reason (content_filter)",
    ),
    (
        "length_broken_json",
        dict(text=GOOD_TEXT[:20], finish_reason="length"),
        Outcome.INCONCLUSIVE,
        "truncated",
        "finish_reason (length), JSON cut at char 17",
    ),
    (
        "capped_broken_json",
        dict(text=GOOD_TEXT[:20], text_truncated=True),
        Outcome.INCONCLUSIVE,
        "text_capped",
        "text capped",
    ),
    (
        "cut_stream",
        dict(text=GOOD_TEXT[:20], error_class=ErrorClass.STREAM_CUT, finish_reason=None),
        Outcome.TRANSPORT,
        "stream_cut",
        "stream cut",
    ),
    (
        "connect",
        dict(text="", http_status=None, error_class=ErrorClass.CONNECT, finish_reason=None),
        Outcome.TRANSPORT,
        "connect",
        "error (connect)",
    ),
    (
        "http_404_require_parameters",
        dict(http_status=404, error_class=ErrorClass.HTTP_STATUS, error_code=404, finish_reason=None),
        Outcome.INCONCLUSIVE,
        "http_404",
        "http_status (404)",
    ),
]


@pytest.mark.parametrize(
    ("kw", "outcome", "reason", "evidence"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_structured_golden(kw: dict[str, object], outcome: Outcome, reason: str, evidence: str) -> None:
    j = structured.judge([attempt(Contract.STRUCTURED, **kw)], CFG, schema=SCHEMA)
    assert (j.outcome, j.reason) == (outcome, reason), j.evidence
    assert evidence in j.evidence
    assert "\n" not in j.evidence


def test_default_schema_is_the_one_requested_by_the_prompt() -> None:
    from tasks.core.prompts import STRUCTURED_SCHEMA

    card = {
        "name": "Odo",
        "age": 40,
        "character_class": "merchant",
        "is_hostile": False,
        "traits": ["shrewd", "kind", "tired"],
        "greeting": "Cold night, friends.",
    }
    assert (
        structured.judge([attempt(Contract.STRUCTURED, text=json.dumps(card))], CFG).outcome is Outcome.PASS
    )
    bad = structured.judge([attempt(Contract.STRUCTURED, text=json.dumps({**card, "age": 40.5}))], CFG)
    assert bad.reason == "schema_violation" and bad.evidence.startswith("$.age")
    assert structured.default_schema() is STRUCTURED_SCHEMA


def test_evidence_is_capped_to_one_short_line() -> None:
    long_value = "x" * 500
    j = structured.judge(
        [attempt(Contract.STRUCTURED, text=json.dumps({**GOOD, "mood": long_value}))], CFG, schema=SCHEMA
    )
    assert j.outcome is Outcome.FAIL and len(j.evidence) <= structured.EVIDENCE_MAX_CHARS
