"""Tools contract: golden table per turn, how the two turns combine, and the peer comparison (K2VV figures).

Schemas are passed in, so the table does not depend on the shipped request (tasks/core/tool_prompts.py), except
for the last tests, which check that request itself.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.contracts import spec_of, tools
from tasks.core.tool_prompts import CALL_USER, CONTROL_USER, EXPECTED_TOOL, TOOLS, tool_schemas, tools_turn
from tasks.core.types import Attempt, Contract, ErrorClass, Judgement, Outcome, ToolCall

pytestmark = pytest.mark.unit
CFG = CanaryConfig()
SCHEMAS: dict[str, dict[str, Any]] = {
    "roll_dice": {
        "type": "object",
        "properties": {
            "character": {"type": "string"},
            "check": {"type": "string", "enum": ["climb", "stealth"]},
            "dice": {
                "type": "object",
                "properties": {"count": {"type": "integer"}, "sides": {"type": "integer", "enum": [6, 20]}},
                "required": ["count", "sides"],
                "additionalProperties": False,
            },
        },
        "required": ["character", "check", "dice"],
        "additionalProperties": False,
    },
    "lookup_rule": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
}
GOOD_ARGS = {"character": "Kael", "check": "climb", "dice": {"count": 2, "sides": 20}}


def call(name: str = "roll_dice", args: Any = GOOD_ARGS, index: int = 0) -> ToolCall:
    text = args if isinstance(args, str) else json.dumps(args)
    return ToolCall(index=index, id=f"call_{index}", name=name, arguments=text)


def turn(n: int, **kw: Any) -> Attempt:
    """Attempt n of the tools contract: 1 = the call turn, 2 = the control turn."""
    base: dict[str, Any] = dict(attempt_no=n, ttft_ms=None, text="")
    if n == 1:
        base.update(finish_reason="tool_calls", tool_calls=(call(),))
    else:
        base.update(finish_reason="stop", text="Warm bread and the clatter of pans greet the party.")
    base.update(kw)
    return attempt(Contract.TOOLS, **base)


def judge(*attempts: Attempt) -> Judgement:
    return tools.judge(list(attempts), CFG, schemas=SCHEMAS, expected="roll_dice")


CALL_TURN_CASES = [
    ("valid_call", {}, Outcome.PASS, "ok", "roll_dice"),
    (
        "tool_call_split_across_fragments_already_joined",
        dict(tool_calls=(call(args='{"character":"Kael","check":"climb","dice":{"count":2,"sides":20}}'),)),
        Outcome.PASS,
        "ok",
        "valid",
    ),
    (
        "no_call_finish_stop",
        dict(tool_calls=(), finish_reason="stop", text="You rolled a 17!"),
        Outcome.FAIL,
        "no_call",
        "finish_reason (stop)",
    ),
    ("no_call_empty_reply", dict(tool_calls=(), finish_reason="stop"), Outcome.FAIL, "no_call", "''"),
    (
        "finish_tool_calls_without_a_call",
        dict(tool_calls=()),
        Outcome.FAIL,
        "no_call",
        "finish_reason (tool_calls)",
    ),
    (
        "unknown_tool",
        dict(tool_calls=(call("functions.roll_dice"),)),
        Outcome.FAIL,
        "unknown_tool",
        "name (functions.roll_dice) not offered (lookup_rule, roll_dice)",
    ),
    ("nameless_call", dict(tool_calls=(call(""),)), Outcome.FAIL, "unknown_tool", "name (none)"),
    (
        "arguments_cut",
        dict(tool_calls=(call(args='{"character":"Kael","che'),)),
        Outcome.FAIL,
        "bad_json_args",
        "do not parse",
    ),
    (
        "arguments_single_quotes",
        dict(tool_calls=(call(args="{'character':'Kael'}"),)),
        Outcome.FAIL,
        "bad_json_args",
        "do not parse",
    ),
    (
        "arguments_not_an_object",
        dict(tool_calls=(call(args="[1, 2]"),)),
        Outcome.FAIL,
        "bad_json_args",
        "not a JSON object",
    ),
    (
        "arguments_empty",
        dict(tool_calls=(call(args=""),)),
        Outcome.FAIL,
        "bad_json_args",
        "not a JSON object",
    ),
    (
        "missing_required",
        dict(tool_calls=(call(args={"check": "climb", "dice": {"count": 2, "sides": 20}}),)),
        Outcome.FAIL,
        "schema_violation",
        "roll_dice $: 'character' is a required property",
    ),
    (
        "wrong_enum",
        dict(tool_calls=(call(args={**GOOD_ARGS, "check": "dance"}),)),
        Outcome.FAIL,
        "schema_violation",
        "$.check: 'dance' is not one of ['climb', 'stealth']",
    ),
    (
        "nested_wrong_type",
        dict(tool_calls=(call(args={**GOOD_ARGS, "dice": {"count": "2", "sides": 20}}),)),
        Outcome.FAIL,
        "schema_violation",
        "$.dice.count: '2' is not of type 'integer'",
    ),
    (
        "nested_enum",
        dict(tool_calls=(call(args={**GOOD_ARGS, "dice": {"count": 2, "sides": 7}}),)),
        Outcome.FAIL,
        "schema_violation",
        "$.dice.sides: 7 is not one of [6, 20]",
    ),
    (
        "extra_key",
        dict(tool_calls=(call(args={**GOOD_ARGS, "mood": "brave"}),)),
        Outcome.FAIL,
        "schema_violation",
        "Additional properties are not allowed ('mood' was unexpected)",
    ),
    (
        "second_parallel_call_is_broken",
        dict(tool_calls=(call(), call("lookup_rule", {}, index=1))),
        Outcome.FAIL,
        "schema_violation",
        "call[1] lookup_rule $: 'topic' is a required property",
    ),
    (
        "other_offered_tool_only",
        dict(tool_calls=(call("lookup_rule", {"topic": "climbing"}),)),
        Outcome.INCONCLUSIVE,
        "other_tool",
        "expected roll_dice",
    ),
    (
        "cut_by_length",
        dict(tool_calls=(call(args='{"char'),), finish_reason="length"),
        Outcome.INCONCLUSIVE,
        "truncated",
        "cut by length",
    ),
    (
        "cut_by_our_cap",
        dict(tool_calls=(call(args='{"char'),), text_truncated=True),
        Outcome.INCONCLUSIVE,
        "truncated",
        "cap",
    ),
    (
        "length_before_any_call",
        dict(tool_calls=(), finish_reason="length", text="Let me"),
        Outcome.INCONCLUSIVE,
        "truncated",
        "finish_reason (length)",
    ),
    (
        "content_filter",
        dict(tool_calls=(), finish_reason="content_filter"),
        Outcome.FAIL,
        "content_filter",
        "content_filter",
    ),
    (
        "http_429_is_transport",
        dict(tool_calls=(), http_status=429, error_class=ErrorClass.HTTP_STATUS, error_code=429),
        Outcome.TRANSPORT,
        "http_429",
        "429",
    ),
    (
        "stream_cut_mid_call_is_transport",
        dict(tool_calls=(call(args='{"chara'),), finish_reason=None, error_class=ErrorClass.STREAM_CUT),
        Outcome.TRANSPORT,
        "stream_cut",
        "stream cut",
    ),
    (
        "http_404_is_inconclusive",
        dict(tool_calls=(), http_status=404, error_class=ErrorClass.HTTP_STATUS, error_code=404),
        Outcome.INCONCLUSIVE,
        "http_404",
        "404",
    ),
]


@pytest.mark.parametrize(
    ("name", "fields", "outcome", "reason", "evidence"), CALL_TURN_CASES, ids=[c[0] for c in CALL_TURN_CASES]
)
def test_call_turn(name: str, fields: dict[str, Any], outcome: Outcome, reason: str, evidence: str) -> None:
    j = judge(turn(1, **fields))
    assert (j.outcome, j.reason) == (outcome, reason), j.evidence
    assert evidence in j.evidence


CONTROL_TURN_CASES = [
    ("prose_answer", {}, Outcome.PASS, "ok", "no call"),
    (
        "a_call_where_none_is_needed",
        dict(tool_calls=(call(),), finish_reason="tool_calls", text=""),
        Outcome.FAIL,
        "unneeded_call",
        "tool_calls (1: roll_dice)",
    ),
    (
        "a_call_with_text_and_finish_stop",
        dict(tool_calls=(call("lookup_rule", {"topic": "x"}),)),
        Outcome.FAIL,
        "unneeded_call",
        "finish_reason (stop)",
    ),
    ("nothing_at_all", dict(text="  "), Outcome.INCONCLUSIVE, "empty_reply", "no text"),
    (
        "timeout_is_transport",
        dict(http_status=None, error_class=ErrorClass.TIMEOUT, text=""),
        Outcome.TRANSPORT,
        "timeout",
        "before any response",
    ),
]


@pytest.mark.parametrize(
    ("name", "fields", "outcome", "reason", "evidence"),
    CONTROL_TURN_CASES,
    ids=[c[0] for c in CONTROL_TURN_CASES],
)
def test_control_turn(
    name: str, fields: dict[str, Any], outcome: Outcome, reason: str, evidence: str
) -> None:
    j = tools.judge_attempt(turn(2, **fields), SCHEMAS, "roll_dice")
    assert (j.outcome, j.reason) == (outcome, reason), j.evidence
    assert evidence in j.evidence


def test_both_turns_pass_and_the_evidence_names_the_control() -> None:
    j = judge(turn(1), turn(2))
    assert (j.outcome, j.reason) == (Outcome.PASS, "ok")
    assert j.evidence.endswith("control turn pass ok")


def test_a_failing_control_fails_the_contract_even_when_the_call_turn_passed() -> None:
    j = judge(turn(1), turn(2, tool_calls=(call(),), finish_reason="tool_calls"))
    assert (j.outcome, j.reason) == (Outcome.FAIL, "unneeded_call")


def test_the_call_turn_failure_is_reported_first() -> None:
    j = judge(turn(2, tool_calls=(call(),)), turn(1, tool_calls=(), finish_reason="stop", text="17!"))
    assert j.reason == "no_call"


def test_call_turn_pass_stands_when_the_control_was_transport() -> None:
    j = judge(turn(1), turn(2, http_status=503, error_class=ErrorClass.HTTP_STATUS, error_code=503, text=""))
    assert (j.outcome, j.reason) == (Outcome.PASS, "ok")
    assert "control turn transport http_503" in j.evidence


def test_call_turn_transport_with_a_passing_control_is_transport() -> None:
    j = judge(
        turn(1, tool_calls=(), http_status=429, error_class=ErrorClass.HTTP_STATUS, error_code=429), turn(2)
    )
    assert (j.outcome, j.reason) == (Outcome.TRANSPORT, "http_429")


def test_only_the_control_turn_sent_is_inconclusive() -> None:
    assert judge(turn(2)).reason == "no_call_turn"
    assert judge(turn(2)).outcome is Outcome.INCONCLUSIVE
    assert judge().outcome is Outcome.INCONCLUSIVE


def test_only_the_call_turn_sent_is_judged_on_its_own() -> None:
    j = judge(turn(1))
    assert (j.outcome, j.reason) == (Outcome.PASS, "ok")
    assert "control turn not sent" in j.evidence


def test_the_registry_holds_the_tools_judge_with_the_shipped_schemas() -> None:
    good = {"character": "Kael", "check": "climb", "dice": {"count": 2, "sides": 20}, "modifier": 3}
    a = turn(1, tool_calls=(call(args=good),))
    assert spec_of(Contract.TOOLS).judge([a, turn(2)], CFG).outcome is Outcome.PASS
    bad = turn(1, tool_calls=(call(args={**good, "dice": {"count": 2, "sides": 7}}),))
    j = spec_of(Contract.TOOLS).judge([bad], CFG)
    assert (j.outcome, j.reason) == (Outcome.FAIL, "schema_violation")
    assert "$.dice.sides" in j.evidence


# --- peer comparison ---------------------------------------------------------------------------------------


def endpoint(tag: str, triggered: bool, control_call: bool = False, valid: bool = True) -> list[Attempt]:
    args = GOOD_ARGS if valid else {"check": "climb"}
    first = (
        turn(1, tag=tag, tool_calls=(call(args=args),))
        if triggered
        else turn(1, tag=tag, tool_calls=(), finish_reason="stop", text="You rolled 17.")
    )
    second = (
        turn(2, tag=tag, tool_calls=(call(),), finish_reason="tool_calls")
        if control_call
        else turn(2, tag=tag)
    )
    return [first, second]


def compare(fleet: dict[str, list[Attempt]]) -> dict[str, Judgement]:
    judged = {t: judge(*a) for t, a in fleet.items()}
    return tools.compare_with_peers(fleet, judged, SCHEMAS)


def test_figures_follow_k2vv() -> None:
    f = tools.figures(endpoint("a", triggered=True, control_call=True, valid=False), SCHEMAS)
    assert (f.call_turns, f.triggered, f.control_turns, f.false_triggers, f.calls, f.valid_calls) == (
        1,
        1,
        1,
        1,
        2,
        1,
    )
    assert f.trigger_rate == 1.0
    assert f.tool_call_f1 == pytest.approx(2 / 3)  # tp 1, fp 1, fn 0
    assert f.schema_accuracy == 0.5
    silent = tools.figures(endpoint("b", triggered=False), SCHEMAS)
    assert (silent.trigger_rate, silent.tool_call_f1, silent.schema_accuracy) == (0.0, 0.0, None)


def test_an_endpoint_far_below_its_peers_is_flagged_with_the_figures() -> None:
    out = compare({"a": endpoint("a", True), "b": endpoint("b", True), "c": endpoint("c", False)})
    assert (out["c"].outcome, out["c"].reason) == (Outcome.FAIL, "no_call")
    assert "trigger rate 0/1 vs peers' median 1.00 (2 peers)" in out["c"].evidence
    assert "tool_call_f1 0.00 vs 1.00" in out["c"].evidence
    assert "schema accuracy n/a vs 1.00" in out["c"].evidence
    assert "peers" not in out["a"].evidence and out["a"].outcome is Outcome.PASS


def test_one_peer_is_not_enough_to_compare() -> None:
    out = compare({"a": endpoint("a", True), "c": endpoint("c", False)})
    assert "peers" not in out["c"].evidence


def test_when_no_endpoint_calls_the_model_is_blamed_not_the_providers() -> None:
    out = compare({t: endpoint(t, False) for t in ("a", "b", "c")})
    assert {(j.outcome, j.reason) for j in out.values()} == {(Outcome.INCONCLUSIVE, "no_call_everywhere")}
    two = compare({t: endpoint(t, False) for t in ("a", "b")})
    assert {j.reason for j in two.values()} == {"no_call"}  # too few endpoints to blame the model


def test_transport_attempts_are_no_evidence_for_the_peers() -> None:
    down = [
        turn(1, tag="d", tool_calls=(), http_status=429, error_class=ErrorClass.HTTP_STATUS, error_code=429)
    ]
    out = compare({"a": endpoint("a", True), "b": endpoint("b", True), "c": endpoint("c", False), "d": down})
    assert out["d"].outcome is Outcome.TRANSPORT and "peers" not in out["d"].evidence
    assert "(2 peers)" in out["c"].evidence


# --- the shipped request -----------------------------------------------------------------------------------


def test_shipped_tools_are_valid_schemas_with_required_enum_and_nested_object() -> None:
    assert 2 <= len(TOOLS) <= 3
    schemas = tool_schemas()
    assert EXPECTED_TOOL in schemas
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["required"]
    dice = schemas[EXPECTED_TOOL]
    assert "enum" in dice["properties"]["check"]
    assert dice["properties"]["dice"]["type"] == "object" and dice["properties"]["dice"]["required"]


def test_turns_alternate_and_only_the_call_turn_names_the_dice() -> None:
    assert [tools_turn(n) for n in (1, 2, 3, 4)] == ["call", "control", "call", "control"]
    assert "dice" in CALL_USER.lower() and "roll" in CALL_USER.lower()
    assert not any(w in CONTROL_USER.lower() for w in ("dice", "roll", "rule", "inventory", "item"))


def test_judge_round_applies_the_peer_comparison_per_model_and_skips_pin_mismatches() -> None:
    from tasks.core.judge import judge_round
    from tasks.core.types import Endpoint

    fleet = {"a": endpoint("a", True), "b": endpoint("b", True), "c": endpoint("c", False)}
    pinned = [turn(1, tag="p", served_provider="Elsewhere", provider_name="P")]
    attempts = [a for rows in fleet.values() for a in rows] + pinned
    eps = [Endpoint("m/x", t, "DeepInfra", supported_parameters=("tools",)) for t in fleet]
    eps.append(Endpoint("m/x", "p", "P", supported_parameters=("tools",)))
    results = {r.tag: r for r in judge_round(attempts, eps, CFG) if r.contract is Contract.TOOLS}
    assert results["c"].reason == "no_call" and "(2 peers)" in results["c"].evidence
    assert results["p"].reason == "pin_mismatch"
    assert results["c"].attempt_ids == ("r1:c:tools:1", "r1:c:tools:2")
