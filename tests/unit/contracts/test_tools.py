"""Tools contract: golden table per turn and how the two turns combine (the peer comparison and the shipped request:
test_tools_peers.py).

Schemas are passed in (tool_turns.py), so the table does not depend on the shipped request
(tasks/core/tool_prompts.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from tool_turns import CFG, GOOD_ARGS, SCHEMAS, call, judge, turn

from tasks.core.contracts import spec_of, tools
from tasks.core.types import Contract, ErrorClass, Outcome

pytestmark = pytest.mark.unit


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
