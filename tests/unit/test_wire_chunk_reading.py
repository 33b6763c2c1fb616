"""Reading one parsed chunk (tasks/core/wire/chunks.py), golden cases at the edges: what an error's one-line
message keeps of a relayed upstream body (its message at any of the usual nestings, bounded; the body itself
when it names none), the finish reasons and usage a chunk carries, and how a long line is cut."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tasks.core.round_records import Usage
from tasks.core.wire.chunks import (
    PROVIDER_NAME_CHARS,
    chunk_error,
    chunk_finish,
    chunk_usage,
    deltas_text,
    finish_reason,
    one_line,
    upstream_words,
)

pytestmark = pytest.mark.unit


def relayed(raw: object, provider: str | None = "Chutes") -> str:
    """The one-line message of an HTTP 429 whose `metadata.raw` is `raw`."""
    metadata: dict[str, Any] = {"raw": raw} if provider is None else {"provider_name": provider, "raw": raw}
    found = chunk_error({"error": {"code": 429, "message": "Provider returned error", "metadata": metadata}})
    assert found is not None and found[0] == 429
    return found[1]


def nested(key: str, levels: int, leaf: object) -> object:
    """`leaf` under `levels` nestings: dicts under `key`, or lists when key is "[]"."""
    for _ in range(levels):
        leaf = [leaf] if key == "[]" else {key: leaf}
    return leaf


@pytest.mark.parametrize(("raw", "words"), [
    ({"detail": "Model is overloaded"}, "Model is overloaded"),  # FastAPI's shape
    ({"error": "rate limited"}, "rate limited"),  # an error given as a string
    ({"errors": [{"message": "quota exceeded"}]}, "quota exceeded"),  # a list of errors
    ('{"errors": [{"message": "quota exceeded"}]}', "quota exceeded"),  # the same as a JSON string
    ([{"code": 1}, {"detail": "second"}], "second"),  # a list: the first item that names one
    ([{}, {}, {}, {"message": "fourth"}], "fourth"),
], ids=["detail", "error-string", "errors-list", "errors-json-string", "list", "fourth-item"])
def test_the_upstreams_own_message_is_found_in_its_usual_shapes(raw: object, words: str) -> None:
    assert relayed(raw) == f"Provider returned error [Chutes]: {words}"


@pytest.mark.parametrize("key", ["error", "[]"], ids=["error-objects", "lists"])
def test_a_message_is_found_four_levels_down_and_no_deeper(key: str) -> None:
    deep = nested(key, 4, {"message": "deep"})
    assert relayed(deep) == "Provider returned error [Chutes]: deep"
    deeper = nested(key, 5, {"message": "deep"})  # past the depth searched: the body itself, as JSON
    assert relayed(deeper) == "Provider returned error [Chutes]: " + json.dumps(deeper)
    assert relayed(json.dumps(deeper)) == "Provider returned error [Chutes]: " + json.dumps(deeper)


@pytest.mark.parametrize("raw", [
    {"código": "sobrecarga, inténtelo más tarde"},  # no message key: the body, non-ASCII kept as it is
    [{}, {}, {}, {}, {"message": "fifth"}],  # only the first four items of a list are searched
    [1, "two", None],
    {"error": {"code": 7}, "errors": []},
], ids=["no-message", "fifth-item", "no-objects", "empty-error"])
def test_a_body_naming_no_message_is_kept_whole(raw: object) -> None:
    text = json.dumps(raw, ensure_ascii=False)
    assert relayed(raw) == f"Provider returned error [Chutes]: {text}"
    assert relayed(text) == f"Provider returned error [Chutes]: {text}"  # the same body as a JSON string


def test_a_raw_that_is_no_text_and_no_json_body_adds_nothing_but_the_provider() -> None:
    assert relayed(None) == relayed(12) == "Provider returned error [Chutes]"
    assert relayed({"when": {1, 2}}) == "Provider returned error [Chutes]"  # an object json cannot write
    assert relayed("{not json", provider=None) == "Provider returned error upstream: {not json"
    assert upstream_words({"provider_name": "P"}) == "[P]"


def test_the_provider_name_is_cut_to_its_own_bound() -> None:
    name = "N" * 100
    assert upstream_words({"provider_name": name}) == f"[{'N' * (PROVIDER_NAME_CHARS - 1)}…]"


def test_a_code_that_is_a_word_opens_the_message_or_is_it() -> None:
    assert chunk_error({"error": {"code": "rate_limited"}}) == (None, "rate_limited")
    assert chunk_error({"error": {"code": "rate_limited", "message": "slow down"}}) == (None, "rate_limited: slow down")
    meta = {"provider_name": "Chutes"}
    assert chunk_error({"error": {"code": 502, "metadata": meta}}) == (502, "[Chutes]")


def test_one_line_keeps_a_line_at_its_limit_and_cuts_one_past_it() -> None:
    assert one_line("x" * 300) == "x" * 300
    assert one_line("x" * 301) == "x" * 299 + "…"
    assert one_line("a  b\n c", limit=5) == "a b c"
    assert one_line("abcdef", limit=5) == "abcd…"


def test_a_finish_reason_that_is_no_word_is_not_one() -> None:
    choices = [{"index": 0, "finish_reason": 1, "native_finish_reason": ["stop"]},
               {"index": 1, "finish_reason": "stop", "native_finish_reason": "end_turn"}]
    assert chunk_finish({"choices": choices}) == ("stop", "end_turn")
    assert chunk_finish({"choices": [{"finish_reason": True, "native_finish_reason": "length"}]}) == (None, "length")
    assert chunk_finish({"choices": [{"finish_reason": "stop", "native_finish_reason": 0.5}]}) == ("stop", None)
    assert finish_reason(None) is None and finish_reason({}) is None
    assert finish_reason({"choices": choices}) == "stop"


def test_usage_keeps_its_cost_when_it_is_a_finite_number() -> None:
    usage = {"prompt_tokens": 21, "completion_tokens": 2, "total_tokens": 23, "cost": 0.00042}
    assert chunk_usage({"usage": usage}) == Usage(21, 2, 23, 0.00042)
    assert chunk_usage({"usage": usage | {"cost": 3}}) == Usage(21, 2, 23, 3.0)
    for bad in (True, "0.1", float("inf"), None):
        assert chunk_usage({"usage": usage | {"cost": bad}}) == Usage(21, 2, 23, None)


def test_reasoning_of_several_deltas_is_joined_as_it_came() -> None:
    deltas = [{"reasoning": "First, ", "content": "A"}, {"reasoning_content": "then.", "refusal": "B"}]
    assert deltas_text(deltas) == ("AB", "First, then.")
