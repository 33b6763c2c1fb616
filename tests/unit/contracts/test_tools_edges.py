"""Edges of the tools contract (tasks/core/contracts/tools.py): the excerpt's cap, which endpoints are probed,
the call turn's evidence when no call came (filtered, cut), unnamed and unexpected calls, arguments nested too
deep to parse, the expected tool a caller names, and a round with no call turn."""

from __future__ import annotations

import pytest
from tool_turns import SCHEMAS, call, judge, turn

from tasks.core.contracts import tools
from tasks.core.types import Endpoint, Judgement, Outcome, ToolCall

pytestmark = pytest.mark.unit


def test_the_excerpt_is_one_line_cut_to_its_cap() -> None:
    cap = tools.EXCERPT_CHARS
    assert tools._excerpt("a  b\n c") == "'a b c'"
    assert tools._excerpt("x" * cap) == repr("x" * cap)
    assert tools._excerpt("x" * (cap + 1)) == repr("x" * (cap - 1) + "…")


def test_only_endpoints_that_list_tools_are_probed() -> None:
    assert tools.lists_tools(Endpoint("m/x", "a", "A", supported_parameters=("tools", "tool_choice")))
    assert not tools.lists_tools(Endpoint("m/x", "a", "A", supported_parameters=("tool_choice",)))


@pytest.mark.parametrize(("fields", "expected"), [
    (dict(tool_calls=(), finish_reason="content_filter"),
     Judgement(Outcome.FAIL, "content_filter", "call turn: finish_reason (content_filter)")),
    (dict(tool_calls=(), finish_reason="length"),
     Judgement(Outcome.INCONCLUSIVE, "truncated", "call turn: finish_reason (length), no call")),
    (dict(tool_calls=(call(), call(index=1, name="lookup_rule", args={"topic": "falls"}))),
     Judgement(Outcome.PASS, "ok", "call turn: roll_dice '{\"character\": \"Kael\", \"check\": \"climb\", "
               "\"dice\": {\"count\": 2…' valid, finish_reason (tool_calls)")),  # 59 characters and the ellipsis
], ids=["filtered", "cut", "two-calls"])
def test_the_call_turn_whole(fields: dict[str, object], expected: Judgement) -> None:
    assert tools.judge_attempt(turn(1, **fields), SCHEMAS, "roll_dice") == expected


def test_a_control_turn_names_each_call_even_an_unnamed_one() -> None:
    calls = (call(), ToolCall(index=1, id="c1", name="", arguments="{}"))
    assert tools.judge_attempt(turn(2, tool_calls=calls), SCHEMAS, "roll_dice") == Judgement(
        Outcome.FAIL, "unneeded_call", "control turn: tool_calls (2: roll_dice, ?), finish_reason (stop)")


def test_arguments_nested_too_deep_do_not_parse() -> None:
    deep = call(args="[" * 100_000 + "]" * 100_000)
    got = tools.call_problem(deep, SCHEMAS)
    assert got is not None and got.reason == "bad_json_args"
    assert got.evidence.startswith("call[0] roll_dice arguments do not parse (too deep): '[[[")


def test_the_expected_tool_is_the_callers() -> None:
    j = tools.judge([turn(1, tool_calls=(call(name="lookup_rule", args={"topic": "falls"}),))], tools.CanaryConfig(),
                    schemas=SCHEMAS, expected="lookup_rule")
    assert (j.outcome, j.reason) == (Outcome.PASS, "ok")
    assert judge() == Judgement(Outcome.INCONCLUSIVE, "no_call_turn", "call turn not sent")


def test_a_gap_of_exactly_the_threshold_is_flagged_with_every_figure() -> None:
    from test_tools_peers import compare, endpoint

    half = endpoint("c", True) + [turn(3, tag="c", tool_calls=(), finish_reason="stop", text="You rolled 4.")]
    out = compare({"a": endpoint("a", True), "b": endpoint("b", True), "c": half})
    assert out["c"].evidence.endswith(
        "; trigger rate 1/2 vs peers' median 1.00 (2 peers); tool_call_f1 0.67 vs 1.00; schema accuracy 1.00 vs 1.00")


def test_nobody_calling_is_the_prompts_fault_and_says_so() -> None:
    from test_tools_peers import compare, endpoint

    out = compare({t: endpoint(t, False) for t in ("a", "b", "c")})
    assert out["a"] == Judgement(Outcome.INCONCLUSIVE, "no_call_everywhere", judge(*endpoint("a", False)).evidence
                                 + "; no endpoint of the model triggered (3 with evidence)")
