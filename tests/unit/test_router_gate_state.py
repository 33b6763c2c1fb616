"""What the router's gate (provider_canary/router/stream.py) keeps in its state as a stream goes by: the billed token
counts of the upstream's usage chunk (both, and not lost to a later chunk without usage), no bytes held once the
preamble is handed over at the commit, nothing pending once the upstream closed, and the escaped opening of a 200 that
is not an event stream, whatever bytes it holds; a choice that is no JSON object is no output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from provider_canary.router import reasons
from provider_canary.router import stream as g
from provider_canary.router.reasons import Cause
from provider_canary.router.stream_events import Kind, classify

pytestmark = pytest.mark.unit
PREAMBLE = b": OPENROUTER PROCESSING\n\n" + b'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'


def data(doc: Any) -> bytes:
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


def choice(delta: dict[str, Any], finish: str | None = None, **top: Any) -> bytes:
    return data({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **top})


def run(*events: bytes, gate: g.Gate | None = None) -> g.Gate:
    gate = gate or g.Gate()
    for raw in events:
        gate, _ = g.feed(gate, raw)
    return gate


def test_both_billed_counts_are_read_after_the_commit_and_kept_past_a_later_chunk() -> None:
    gate = run(choice({"content": "Hi"}), choice({}, usage={"prompt_tokens": 21, "completion_tokens": 2}))
    assert (gate.prompt_tokens, gate.completion_tokens) == (21, 2)
    later = run(choice({}, "stop"), gate=gate)
    assert (later.prompt_tokens, later.completion_tokens, later.finished) == (21, 2, True)


def test_a_usage_chunk_with_completion_tokens_only_is_read() -> None:
    gate = run(choice({"content": "Hi"}), choice({}, usage={"completion_tokens": 5}))
    assert (gate.prompt_tokens, gate.completion_tokens) == (None, 5)


@pytest.mark.parametrize("first", [choice({"content": "Hi"}), choice({}, "length")], ids=["content", "empty-length"])
def test_the_commit_hands_the_preamble_over_and_holds_no_bytes(first: bytes) -> None:
    waiting = run(PREAMBLE)
    assert waiting.held == PREAMBLE and waiting.phase is g.Phase.WAITING
    gate, actions = g.feed(waiting, first)
    assert actions == [g.Commit(PREAMBLE + first)]
    assert gate.phase is g.Phase.COMMITTED and gate.held == b""


@pytest.mark.parametrize("tail", [b"", b"  \n", b"\n", b"<html>no event"], ids=["none", "blanks", "newline", "junk"])
def test_a_closed_stream_keeps_no_pending_bytes(tail: bytes) -> None:
    gate, _ = g.eof(run(choice({"content": "Hi"}, "stop"), tail))
    assert gate.phase is g.Phase.CLOSED and gate.pending == b""


def test_a_200_that_is_no_event_stream_fails_over_with_its_opening_escaped() -> None:
    page = b"<html>\xff\xfe Bad gateway</html>\n\n"
    gate, actions = g.feed(g.Gate(), page)
    assert gate.phase is g.Phase.CLOSED
    escaped = "<html>\ufffd\ufffd Bad gateway</html>\n\n"
    assert actions == [g.FailOver(reasons.fixed(Cause.BAD_FRAME_BEFORE_COMMIT), escaped)]


@pytest.mark.parametrize("odd", [None, "Hello", 1, ["Hello"]], ids=["null", "string", "number", "list"])
def test_a_choice_that_is_no_object_is_no_output_and_commits_nothing(odd: object) -> None:
    raw = data({"choices": [odd]})
    assert classify(raw)[0] is Kind.EMPTY
    gate, actions = g.feed(g.Gate(), raw)
    assert actions == [] and gate.phase is g.Phase.WAITING and gate.held == raw
