"""Tools contract: the peer comparison (K2VV figures) and the shipped request (tasks/core/tool_prompts.py) itself."""

from __future__ import annotations

import jsonschema
import pytest
from tool_turns import CFG, GOOD_ARGS, SCHEMAS, call, judge, turn

from tasks.core.contracts import tools
from tasks.core.tool_prompts import CALL_USER, CONTROL_USER, EXPECTED_TOOL, TOOLS, tool_schemas, tools_turn
from tasks.core.types import Attempt, Contract, ErrorClass, Judgement, Outcome

pytestmark = pytest.mark.unit


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
