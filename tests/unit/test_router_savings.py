"""Token savers (provider_canary/router/savings.py) and the token count they are measured with
(provider_canary/router/tokens.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from provider_canary.router import tokens
from provider_canary.router.routes import RouterSettings
from provider_canary.router.savings import (
    SaverContext,
    collapse_whitespace,
    drop_duplicate_system,
    measure_savings,
    run_savers,
    trim_old_turns,
)

pytestmark = pytest.mark.unit

CTX = SaverContext()


def test_collapse_whitespace_changes_prose_only() -> None:
    prose = "Hello,    world.  \n\n\n\nNext  line."
    out = collapse_whitespace([{"role": "user", "content": prose}], CTX)[0]["content"]
    assert out == "Hello, world.  \n\nNext line."  # trailing spaces kept: a Markdown break, or a field


DATA = {
    "tsv": "id\tname\t\tscore\n1\tbob\t\t3",
    "columns": "col1    col2\nval1    val2",
    "json": '{"note": "two  spaces", "n": 1}',
    "code": "see:\n```\na    =  1\n\n\n\nb\n```",
    "inline code": "run `ls    -l` please",
    "indented": "steps:\n    indented  code",
    "markdown table": "| a  | b |\n|----|---|",
    "html": "<pre>a    b</pre>",
}


@pytest.mark.parametrize("text", list(DATA.values()), ids=list(DATA))
@pytest.mark.parametrize("role", ["user", "system", "tool", "assistant"])
def test_collapse_whitespace_never_changes_data(text: str, role: str) -> None:
    message = {"role": role, "content": text, **({"tool_call_id": "c1"} if role == "tool" else {})}
    assert collapse_whitespace([message], CTX) == [message]
    parts = {"role": role, "content": [{"type": "text", "text": text}]}
    assert collapse_whitespace([parts], CTX) == [parts]


def test_a_tool_result_is_never_touched_even_when_it_reads_as_prose() -> None:
    result = {"role": "tool", "tool_call_id": "c1", "content": "Paris    is sunny.\n\n\n\nTomorrow   too."}
    assert collapse_whitespace([result], CTX) == [result]


def test_the_default_savers_change_no_data() -> None:
    messages = [{"role": "user", "content": text} for text in DATA.values()]
    messages.append({"role": "tool", "tool_call_id": "c1", "content": "Hello,    world."})
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":  "x\ty"}'}}]})
    result = run_savers(copy.deepcopy(messages), RouterSettings().savers, CTX)
    assert result.messages == messages and result.failed is None


def test_collapse_whitespace_touches_text_parts_only() -> None:
    parts = [{"type": "text", "text": "a   b"}, {"type": "image_url", "image_url": {"url": "data:x  y"}}]
    out = collapse_whitespace([{"role": "user", "content": parts}], CTX)[0]["content"]
    assert out == [{"type": "text", "text": "a b"}, parts[1]]


def test_drop_duplicate_system_drops_exact_repeats_only() -> None:
    msgs = [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "Be kind."},
        {"role": "system", "content": "Be   kind. "},  # not the same text: kept
        {"role": "system", "content": "Other."},
    ]
    assert drop_duplicate_system(msgs, CTX) == [msgs[0], msgs[1], msgs[3], msgs[4]]


def _conversation(turns: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are Ana, a bard."}]
    for i in range(turns):
        msgs.append({"role": "user", "content": f"Question number {i}: " + "tell me more " * 20})
        msgs.append({"role": "assistant", "content": f"Answer number {i}: " + "a long story " * 20})
    return msgs


def test_trim_old_turns_drops_whole_old_turns_until_under_budget() -> None:
    msgs = _conversation(6)
    budget = tokens.count_messages(msgs[:1] + msgs[-4:]) + 5
    out = trim_old_turns(msgs, SaverContext(token_budget=budget))
    assert tokens.count_messages(out) <= budget
    assert out[0] == msgs[0] and out[-4:] == msgs[-4:] and out == msgs[:1] + msgs[-4:]


def test_trim_old_turns_never_drops_the_last_turn_or_system() -> None:
    msgs = _conversation(2)
    out = trim_old_turns(msgs, SaverContext(token_budget=1))
    assert out == [msgs[0], msgs[3], msgs[4]]
    assert trim_old_turns(msgs, SaverContext(token_budget=0)) == msgs


def test_pipeline_runs_in_order_and_never_touches_the_input() -> None:
    msgs = [
        {"role": "system", "content": "S  s"},
        {"role": "system", "content": "S s"},
        {"role": "user", "content": "u"},
    ]
    before = copy.deepcopy(msgs)
    result = run_savers(msgs, ["collapse_whitespace", "drop_duplicate_system"], CTX)
    assert result.messages == [{"role": "system", "content": "S s"}, {"role": "user", "content": "u"}]
    assert result.changed and result.failed is None and msgs == before


def _explodes(messages: list[dict[str, Any]], ctx: SaverContext) -> list[dict[str, Any]]:
    messages[0]["content"] = "mutated before failing"
    raise RuntimeError("saver bug")


def test_a_failing_saver_fails_open_with_the_original_object() -> None:
    msgs = [{"role": "user", "content": "a   b"}]
    registry = {"collapse_whitespace": collapse_whitespace, "boom": _explodes}
    result = run_savers(msgs, ["collapse_whitespace", "boom"], CTX, registry)
    assert result.messages is msgs and msgs == [{"role": "user", "content": "a   b"}]
    assert result.failed is not None and result.failed.startswith("boom: RuntimeError")
    assert not result.changed


def test_a_saver_returning_garbage_fails_open() -> None:
    msgs = [{"role": "user", "content": "x"}]
    result = run_savers(msgs, ["bad"], CTX, {"bad": lambda m, c: None})  # type: ignore[arg-type,return-value]
    assert result.messages is msgs and result.failed is not None


def test_non_list_messages_are_left_alone() -> None:
    assert run_savers("oops", ["collapse_whitespace"], CTX).messages == "oops"


def test_measured_savings_are_the_token_difference_of_the_two_bodies() -> None:
    before = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "a      b\n\n\n\nc"}]}
    ).encode()
    after = json.dumps({"model": "m", "messages": [{"role": "user", "content": "a b\n\nc"}]}).encode()
    savings = measure_savings(before, after)
    assert savings.tokens_before == tokens.count_body(before)
    assert savings.tokens_sent == tokens.count_body(after)
    assert savings.tokens_saved == savings.tokens_before - savings.tokens_sent > 0  # type: ignore[operator]
    assert measure_savings(after, after).tokens_saved == 0
    assert measure_savings(b"not json", after).tokens_saved is None


def test_token_counts_follow_the_documented_formula() -> None:
    msgs = [{"role": "user", "content": "Hello world"}, {"role": "assistant", "content": "Hi", "name": "bot"}]
    c = tokens.count_text
    expected = 3 + (3 + c("user") + c("Hello world")) + (3 + c("assistant") + c("Hi") + c("bot") + 1)
    assert tokens.count_messages(msgs) == expected


def test_the_fallback_approximation_is_deterministic_and_monotone() -> None:
    short, long = "Hello world", "Hello world, and a much longer sentence follows here."
    assert tokens.approx_count(short) == tokens.approx_count(short) > 0
    assert tokens.approx_count(long) > tokens.approx_count(short)
    assert tokens.approx_count("") == 0


def test_the_exact_tokenizer_is_o200k_when_installed() -> None:
    if not tokens.TOKENIZER.startswith("o200k"):
        pytest.skip("bpe-openai not installed: the approximation is in use")
    assert tokens.count_text("Hello world") == 2  # o200k_base ids [13225, 2375]
