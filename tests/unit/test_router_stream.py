"""The first-chunk commit rule (provider_canary/router/stream.py): table of streams -> what the client sees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provider_canary.router import stream as g
from provider_canary.router.stream import Abort, Commit, FailOver, Finish, Gate, Phase, Send
from provider_canary.router.stream_events import Kind, classify
from tasks.core.wire.sse import Chunk

pytestmark = pytest.mark.unit

KEEPALIVE = b": OPENROUTER PROCESSING\n\n"
DONE = b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    doc: dict[str, Any] = {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "created": 7,
        "model": "m",
        "provider": "P",
        **extra,
    }
    if delta is not None:
        doc["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


ROLE = chunk({"role": "assistant", "content": ""})
HELLO = chunk({"content": "Hello", "role": "assistant"})
WORLD = chunk({"content": " world", "role": "assistant"})
STOP = chunk({"content": "", "role": "assistant"}, "stop")
USAGE = chunk(
    {"content": "", "role": "assistant"}, "stop", usage={"prompt_tokens": 21, "completion_tokens": 2}
)
ERROR = chunk({"content": ""}, "error", error={"code": 429, "message": "Rate limit exceeded"})


def run(parts: list[bytes], end: str = "eof", read_all: bool = False) -> tuple[Gate, list[g.Action]]:
    gate, actions = Gate(read_all=read_all), []
    for part in parts:
        gate, acts = g.feed(gate, part)
        actions += acts
    finisher = {"eof": g.eof, "broken": lambda gt: g.broken(gt, "ReadError"), "timeout": g.timed_out}[end]
    gate, acts = finisher(gate)
    return gate, actions + acts


def client_bytes(actions: list[g.Action]) -> bytes:
    return b"".join(a.data for a in actions if isinstance(a, Commit | Send | Abort))


@pytest.mark.parametrize(
    ("parts", "end", "expected_failover"),
    [
        ([KEEPALIVE], "timeout", "first_chunk_timeout"),  # headers, then a stall with keep-alives
        ([KEEPALIVE, ROLE], "broken", "stream_error_before_commit"),  # role-only chunk then death
        ([KEEPALIVE, ROLE], "eof", "stream_ended_before_commit"),
        ([ROLE, DONE], "eof", "stream_ended_before_commit"),  # a completed stream with no output at all
        ([KEEPALIVE, ERROR], "eof", "error_chunk_before_commit"),
        ([b"data: {not json\n\n"], "eof", "bad_frame_before_commit"),
        ([b"<html>\n<body>Bad gateway</body>\n\n</html>\n"], "eof", "bad_frame_before_commit"),
        ([b"<!DOCTYPE html><html>502</html>"], "eof", "bad_frame_before_commit"),
        ([], "eof", "stream_ended_before_commit"),
    ],
    ids=[
        "stall",
        "die-before-content",
        "eof-before-content",
        "done-without-content",
        "error-chunk",
        "bad-frame",
        "html-page-under-200",
        "html-page-without-blank-line",
        "empty",
    ],
)
def test_failures_before_the_first_content_chunk_fail_over_and_send_nothing(
    parts: list[bytes], end: str, expected_failover: str
) -> None:
    gate, actions = run(parts, end)
    assert [str(a.reason) for a in actions if isinstance(a, FailOver)] == [expected_failover]
    assert client_bytes(actions) == b""
    assert gate.phase is Phase.CLOSED


def test_commit_hands_over_the_held_preamble_and_the_first_content_chunk_byte_for_byte() -> None:
    gate, actions = g.feed(Gate(), KEEPALIVE + ROLE + HELLO + WORLD)
    assert gate.phase is Phase.COMMITTED
    assert actions == [Commit(KEEPALIVE + ROLE + HELLO), Send(WORLD)]


def test_a_complete_stream_is_forwarded_unchanged_and_finishes() -> None:
    stream = KEEPALIVE + ROLE + HELLO + WORLD + STOP + USAGE + DONE
    gate, actions = run([stream])
    assert client_bytes(actions) == stream
    assert isinstance(actions[-1], Finish)
    assert gate.prompt_tokens == 21


@pytest.mark.parametrize("end", ["eof", "broken", "timeout"])
def test_failure_after_the_commit_keeps_the_partial_text_and_ends_with_one_error_chunk(end: str) -> None:
    gate, actions = run([KEEPALIVE, ROLE, HELLO], end)
    out = client_bytes(actions)
    assert out.startswith(KEEPALIVE + ROLE + HELLO)
    tail = out[len(KEEPALIVE + ROLE + HELLO) :]
    assert tail.startswith(b"data: ") and tail.endswith(b"\n\n") and tail.count(b"\n\n") == 1
    doc = json.loads(tail[6:])
    error = doc["error"]
    assert error["code"] in ("upstream_stream_failed", "upstream_timeout") and error["type"] == "server_error"
    assert error["metadata"]["code"] in (502, 504) and "param" in error  # OpenAI's shape, OpenRouter's number
    assert doc["choices"][0]["finish_reason"] == "error"
    assert doc["id"] == "gen-1" and doc["provider"] == "P"  # it continues the same generation
    assert [a for a in actions if isinstance(a, FailOver)] == []
    assert isinstance(actions[-1], Abort) and str(actions[-1].reason).endswith("after_commit")


def test_an_upstream_error_chunk_after_the_commit_is_forwarded_not_duplicated() -> None:
    gate, actions = run([HELLO, ERROR])
    assert client_bytes(actions) == HELLO + ERROR
    assert isinstance(actions[-1], Finish)


@pytest.mark.parametrize("end", ["eof", "broken", "timeout"])
@pytest.mark.parametrize("after", [[STOP], [STOP, USAGE], [STOP, USAGE[:40]]], ids=["finish", "usage", "cut-usage"])
def test_a_stream_whose_finish_chunk_arrived_ends_cleanly_whatever_the_connection_does(
    end: str, after: list[bytes]
) -> None:
    """A reset, a chunked body never terminated, silence past the idle budget: after the finish chunk the answer
    is whole, so the client gets the [DONE] the upstream did not send, never an error chunk."""
    _, actions = run([HELLO, *after], end)
    whole = b"".join(a for a in after if a.endswith(b"\n\n"))
    assert client_bytes(actions) == HELLO + whole + g.DONE
    assert isinstance(actions[-1], Finish) and not [a for a in actions if isinstance(a, Abort | FailOver)]


def test_an_upstream_error_chunk_then_a_reset_adds_nothing() -> None:
    _, actions = run([HELLO, ERROR], "broken")
    assert client_bytes(actions) == HELLO + ERROR and isinstance(actions[-1], Finish)


def test_a_cut_mid_event_never_forwards_half_an_event() -> None:
    partial = WORLD[: len(WORLD) - 10]
    _, actions = run([HELLO, partial])
    out = client_bytes(actions)
    assert out.startswith(HELLO)
    tail = out[len(HELLO) :]
    assert tail.count(b"\n\n") == 1 and json.loads(tail[6:])["error"]["metadata"]["code"] == 502


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (KEEPALIVE, Kind.KEEPALIVE),
        (ROLE, Kind.EMPTY),
        (chunk(None, usage={"prompt_tokens": 1}), Kind.EMPTY),
        (HELLO, Kind.CONTENT),
        (chunk({"reasoning": "thinking"}), Kind.CONTENT),
        (chunk({"content": None, "tool_calls": [{"index": 0, "function": {"name": "f"}}]}), Kind.CONTENT),
        (STOP, Kind.FINISH),
        (DONE, Kind.DONE),
        (ERROR, Kind.ERROR),
        (b"data: [1, 2]\n\n", Kind.BAD),
    ],
)
def test_classify(raw: bytes, kind: Kind) -> None:
    assert classify(raw)[0] is kind


def test_classify_drops_a_bom_only_before_the_streams_first_event_and_caps_the_payload() -> None:
    bom = b"\xef\xbb\xbf"
    assert classify(bom + HELLO, first=True)[0] is Kind.CONTENT
    assert classify(bom + HELLO) == (Kind.BAD, None)  # not the first event: a BOM there is no SSE
    assert classify(HELLO, max_bytes=len(HELLO) - 8) == (Kind.BAD, None)  # its payload passed the cap
    assert classify(HELLO, max_bytes=len(HELLO))[0] is Kind.CONTENT


def test_crlf_framing_is_understood() -> None:
    gate, actions = g.feed(Gate(), KEEPALIVE.replace(b"\n", b"\r\n") + HELLO.replace(b"\n", b"\r\n"))
    assert gate.phase is Phase.COMMITTED and isinstance(actions[0], Commit)


def test_bare_cr_framing_is_understood_as_the_probe_understands_it() -> None:
    """WHATWG ends a line at a bare CR too (tests/unit/test_sse.py `bare-cr`, the probe's reader): the gate
    commits on the first content event and forwards the bytes untouched."""
    wire = (KEEPALIVE + ROLE + HELLO + STOP + DONE).replace(b"\n", b"\r")
    gate, actions = run([wire])
    assert isinstance(actions[0], Commit) and actions[0].data == (KEEPALIVE + ROLE + HELLO).replace(b"\n", b"\r")
    assert client_bytes(actions) == wire and gate.done


def test_a_bom_before_the_first_event_is_no_bad_frame() -> None:
    _, actions = run([b"\xef\xbb\xbf" + KEEPALIVE + HELLO + DONE])
    assert isinstance(actions[0], Commit) and client_bytes(actions).endswith(HELLO + DONE)


@pytest.mark.parametrize("raw", [b"data:\n\n", b"data: " + b"[" * 100_000 + b"\n\n"], ids=["empty", "deep"])
def test_a_data_event_that_is_no_json_object_before_the_commit_fails_over(raw: bytes) -> None:
    """The official client parses every data payload as JSON: an empty one would break it."""
    _, actions = run([KEEPALIVE + raw + HELLO])
    assert isinstance(actions[0], FailOver) and str(actions[0].reason) == "bad_frame_before_commit"


STREAMS = {
    "complete": [KEEPALIVE, ROLE, HELLO, WORLD, STOP, USAGE, DONE],
    "bare-cr": [e.replace(b"\n", b"\r") for e in (KEEPALIVE, ROLE, HELLO, WORLD, STOP, USAGE, DONE)],
    "crlf-then-lf": [e.replace(b"\n", b"\r\n") for e in (KEEPALIVE, ROLE, HELLO)] + [WORLD, STOP, DONE],
    "cut": [KEEPALIVE, ROLE, HELLO, WORLD],
    "no-content": [KEEPALIVE, ROLE, ROLE],
}


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(STREAMS)),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
)
def test_any_split_of_the_bytes_gives_the_same_client_output(name: str, cuts: list[int]) -> None:
    whole = b"".join(STREAMS[name])
    points = sorted({c % (len(whole) + 1) for c in cuts})
    parts = [whole[a:b] for a, b in zip([0, *points], [*points, len(whole)], strict=True)]
    _, reference = run([whole])
    _, actions = run(parts)
    assert client_bytes(actions) == client_bytes(reference)
    assert [type(a) for a in actions if isinstance(a, FailOver | Finish | Abort)] == [
        type(a) for a in reference if isinstance(a, FailOver | Finish | Abort)
    ]
    read_gate, read = run(parts, read_all=True)  # the judge's frames change nothing on the wire
    assert client_bytes(read) == client_bytes(reference) and [type(a) for a in read] == [type(a) for a in actions]
    for action in read:
        if isinstance(action, Commit | Send) and action.data != g.DONE:
            assert sum(size for size, _ in action.frames) == len(action.data)
    assert (read_gate.done, read_gate.finished, read_gate.prompt_tokens) == (
        run([whole])[0].done, run([whole])[0].finished, run([whole])[0].prompt_tokens)


def test_read_all_hands_on_every_event_once_as_read() -> None:
    _, actions = run([KEEPALIVE + ROLE + HELLO, WORLD + b"data: {broken\n\n", USAGE + DONE], read_all=True)
    frames = [event for a in actions if isinstance(a, Commit | Send) for _, event in a.frames]
    assert [type(e).__name__ for e in frames] == ["NoneType", "Chunk", "Chunk", "Chunk", "BadFrame", "Chunk", "Done"]
    assert [json.dumps(e.data).encode() in raw for e, raw in zip(frames[1:4], (ROLE, HELLO, WORLD), strict=True)
            if isinstance(e, Chunk)] == [True] * 3


CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openrouter"
MASKED = chunk(None, choices=[
    {"index": 0, "delta": {"content": "", "role": "assistant"}, "finish_reason": "stop",
     "native_finish_reason": "network_error"}])


def run_gate(parts: list[bytes], fail_over_empty: bool) -> tuple[Gate, list[g.Action]]:
    gate, actions = Gate(fail_over_empty=fail_over_empty), []
    for part in parts:
        gate, acts = g.feed(gate, part)
        actions += acts
    gate, acts = g.eof(gate)
    return gate, actions + acts


@pytest.mark.parametrize("fail_over_empty", [True, False], ids=["another-tier", "last-tier"])
def test_a_masked_upstream_failure_before_any_content_always_fails_over(fail_over_empty: bool) -> None:
    """OpenRouter's `finish_reason: stop` + `native_finish_reason: network_error` with no content: no answer,
    even on the last tier (the client then gets the router's 503 naming it, not an empty "stop")."""
    _, actions = run_gate([KEEPALIVE, ROLE, MASKED, DONE], fail_over_empty)
    assert [str(a.reason) for a in actions if isinstance(a, FailOver)] == ["native_network_error"]
    assert client_bytes(actions) == b""


def test_the_real_masked_capture_split_anywhere_fails_over_with_the_upstreams_word() -> None:
    import random

    data = (CAPTURES / "masked-network-error.sse").read_bytes()
    for seed in range(10):
        cuts = sorted(random.Random(seed).sample(range(1, len(data)), 5))
        parts = [data[x:y] for x, y in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        _, actions = run_gate(parts, False)
        [failover] = [a for a in actions if isinstance(a, FailOver)]
        assert str(failover.reason) == "native_network_error" and failover.reason.upstream_word == "network_error"
        assert client_bytes(actions) == b""


def test_a_plain_empty_stop_fails_over_while_another_tier_could_answer_and_is_the_last_tiers_answer() -> None:
    empty = [KEEPALIVE, ROLE, STOP, USAGE, DONE]
    _, actions = run_gate(empty, fail_over_empty=True)
    assert [str(a.reason) for a in actions if isinstance(a, FailOver)] == ["empty_answer"]
    assert client_bytes(actions) == b""
    gate, actions = run_gate(empty, fail_over_empty=False)
    assert client_bytes(actions) == b"".join(empty) and isinstance(actions[-1], Finish)


@pytest.mark.parametrize("finish", ["length", "content_filter"])
def test_an_empty_answer_that_says_why_is_the_answer(finish: str) -> None:
    _, actions = run_gate([ROLE, chunk({"content": ""}, finish), DONE], fail_over_empty=True)
    assert not [a for a in actions if isinstance(a, FailOver)] and isinstance(actions[0], Commit)


def test_an_answer_with_content_then_a_plain_stop_is_never_an_empty_answer() -> None:
    _, actions = run_gate([ROLE, HELLO, STOP, DONE], fail_over_empty=True)
    assert client_bytes(actions) == ROLE + HELLO + STOP + DONE
    _, actions = run_gate([chunk({"content": None, "tool_calls": [{"index": 0, "function": {"name": "f"}}]}),
                           STOP, DONE], fail_over_empty=True)
    assert not [a for a in actions if isinstance(a, FailOver)]
