"""The router's gate (provider_canary/router/stream.py, provider_canary/router/stream_events.py,
provider_canary/router/reasons.py) byte for byte and field by field: the error chunk a client gets after the commit, the
stream's metadata it carries, what each failover says, the fast path after the commit (it must never skip what changes
the state), the caps, and how one SSE event is read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from provider_canary.router import reasons
from provider_canary.router import stream as g
from provider_canary.router.stream_events import Kind, classify, finish_reason, usage_tokens
from tasks.core.wire.sse import BadFrame, Chunk, FrameProblem, last_boundary, read_event

pytestmark = pytest.mark.unit


def data(doc: Any) -> bytes:
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


def choice(delta: dict[str, Any] | None = None, finish: str | None = None, native: str | None = None,
           **top: Any) -> bytes:
    return data({"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish,
                              "native_finish_reason": native}], **top})


HI = choice({"content": "Hi"})
META = {"id": "gen-A", "created": 1_700_000_001, "model": "acme/m", "provider": "Alpha"}


def run(*events: bytes, gate: g.Gate | None = None) -> tuple[g.Gate, list[g.Action]]:
    gate = gate or g.Gate()
    actions: list[g.Action] = []
    for raw in events:
        gate, acts = g.feed(gate, raw)
        actions += acts
    return gate, actions


def error_of(action: g.Action) -> dict[str, Any]:
    assert isinstance(action, g.Abort)
    assert action.data.startswith(b"data: {") and action.data.endswith(b"}\n\n")
    return json.loads(action.data[6:])


# -- the error chunk -------------------------------------------------------------------------------------------
def test_the_error_chunk_is_openrouters_mid_stream_error_shape_byte_for_byte() -> None:
    """OpenRouter's mid-stream error chunk (its id, model, provider, finish_reason "error") whose `error` is in
    OpenAI's shape: a string `code`, `type`, `param`, and OpenRouter's numeric code under `metadata`."""
    gate, _ = run(choice({"role": "assistant"}, **META), HI)
    _, [abort] = g.broken(gate, "reset", now_s=5)
    expected = {"id": "gen-A", "object": "chat.completion.chunk", "created": 1_700_000_001, "model": "acme/m",
                "provider": "Alpha", "error": {
                    "message": "upstream stream failed after the reply began "
                    "(stream_error_after_commit); the reply is incomplete",
                    "type": "server_error", "code": "upstream_stream_failed", "param": None,
                    "metadata": {"code": 502, "error_type": "provider_unavailable",
                                 "router_reason": "stream_error_after_commit"}},
                "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error",
                             "native_finish_reason": "error"}]}
    assert isinstance(abort, g.Abort)
    assert abort.data == b"data: " + json.dumps(expected, separators=(",", ":")).encode() + b"\n\n"
    _, [idle] = g.timed_out(gate, now_s=5)
    err = error_of(idle)["error"]
    assert (err["code"], err["metadata"]["code"], err["metadata"]["error_type"]) == ("upstream_timeout", 504, "timeout")


def test_without_metadata_the_error_chunk_is_stamped_with_now_and_blank_names() -> None:
    gate, _ = run(HI)
    chunk = error_of(g.eof(gate, now_s=7)[1][0])
    assert (chunk["id"], chunk["created"], chunk["model"], chunk["provider"]) == ("gen-router-7", 7, "", "")
    assert error_of(g.eof(gate)[1][0])["created"] == 0  # now_s defaults to 0


def test_metadata_comes_from_the_held_chunks_and_bad_values_never_replace_good_ones() -> None:
    gate, _ = run(choice({"role": "assistant"}, **META),
                  choice({"content": "Hi"}, id=5, created="later", model=None, provider=7))
    assert (gate.chunk_id, gate.created, gate.model, gate.provider) == ("gen-A", 1_700_000_001, "acme/m", "Alpha")
    finished, _ = run(choice({}, "length", **META))  # an explained empty finish is the commit point
    assert (finished.phase, finished.held, finished.finished, finished.model) == (
        g.Phase.COMMITTED, b"", True, "acme/m")
    assert g.eof(finished)[1] == [g.Send(b"data: [DONE]\n\n"), g.Finish()]  # the lost [DONE], sent for it


def test_a_masked_failure_in_the_committing_chunk_is_kept() -> None:
    gate, _ = run(choice({"content": "Hi"}, "stop", "network_error"))
    assert (gate.native_error, gate.finished, gate.held) == ("network_error", True, b"")
    assert g.native_error(json.loads(choice({}, "stop", "upstream_" + "error" * 20)[6:])) == ("upstream_" +
                                                                                          "error" * 20)[:40]
    assert g.native_error({"choices": ["not a choice"]}) is None


# -- what a failover says ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("events", "reason", "word", "detail"), [
    ([b"data: [DONE]\n\n"], "stream_ended_before_commit", None, "[DONE] before any content"),
    ([data({"error": {"code": 429, "message": "Rate limited"}})], "error_chunk_before_commit", "429",
     "429: Rate limited"),
    ([b"data: <html>" + b"x" * 100 + b"\n\n"], "bad_frame_before_commit", None, "data: <html>" + "x" * 68),
    ([choice({}, "stop", "network_error", **META)], "native_network_error", "network_error",
     "native_finish_reason (network_error), no content"),
], ids=["done", "error-chunk", "bad-frame", "masked"])
def test_a_failover_before_the_commit_says_why(events: list[bytes], reason: str, word: str | None,
                                               detail: str) -> None:
    gate, [failover] = run(*events)
    assert isinstance(failover, g.FailOver) and gate.phase is g.Phase.CLOSED
    assert (str(failover.reason), failover.reason.word, failover.detail) == (reason, word, detail)


def test_an_empty_stop_that_fails_over_says_so_and_keeps_the_metadata() -> None:
    gate, [failover] = run(choice({}, "stop", **META), gate=g.Gate(fail_over_empty=True))
    assert isinstance(failover, g.FailOver) and failover.detail == "finish_reason (stop), no content or tool call"
    assert gate.model == "acme/m"


def test_a_stream_that_closes_or_is_no_event_stream_before_any_content() -> None:
    gate, [failover] = g.eof(g.Gate())
    assert isinstance(failover, g.FailOver) and failover.detail == "stream closed before any content"
    page = b"\xff<html>" + b"y" * 100  # no blank line: the whole body is the pending rest
    gate, [bad] = g.eof(g.feed(g.Gate(), page)[0])
    assert isinstance(bad, g.FailOver) and str(bad.reason) == "bad_frame_before_commit"
    assert bad.detail == page[:80].decode("utf-8", "replace") and gate.pending == b"" and gate.phase is g.Phase.CLOSED


def test_too_much_preamble_is_a_broken_upstream_but_exactly_the_limit_is_not() -> None:
    comment = b": " + b"k" * 1020 + b"\n\n"  # 1 KiB
    gate, actions = run(*[comment] * (g.MAX_HELD_BYTES // len(comment)))
    assert actions == [] and len(gate.held) == g.MAX_HELD_BYTES
    gate, [failover] = g.feed(gate, b":\n\n")
    assert isinstance(failover, g.FailOver) and gate.phase is g.Phase.CLOSED
    assert (str(failover.reason), failover.detail) == ("bad_frame_before_commit", "too much preamble")


def test_an_event_larger_than_the_pending_cap_is_a_broken_stream_but_exactly_the_cap_is_not() -> None:
    at_cap = b"data: " + b"x" * (g.MAX_PENDING_BYTES - 6)
    gate, actions = g.feed(g.Gate(), at_cap)
    assert actions == [] and len(gate.pending) == g.MAX_PENDING_BYTES
    gate, [failover] = g.feed(gate, b"x")
    assert isinstance(failover, g.FailOver) and failover.detail == "an event larger than the pending cap"
    committed, _ = run(HI)
    closed, [abort] = g.feed(committed, at_cap + b"x")
    assert str(error_of(abort)["error"]["metadata"]["router_reason"]) == "stream_error_after_commit"
    assert closed.phase is g.Phase.CLOSED


# -- after the commit: the fast path never skips a state change ---------------------------------------------
def test_done_alone_after_the_commit_finishes_the_stream() -> None:
    gate, actions = run(b"data: [DONE]\n\n", gate=run(HI)[0])
    assert actions == [g.Send(b"data: [DONE]\n\n"), g.Finish()] and gate.done and gate.phase is g.Phase.CLOSED


def test_a_usage_chunk_and_an_error_after_the_commit_are_read() -> None:
    gate, _ = run(data({"choices": [{"index": 0, "delta": {}}], "usage": {"prompt_tokens": 42}}), gate=run(HI)[0])
    assert (gate.prompt_tokens, gate.finished, gate.phase) == (42, False, g.Phase.COMMITTED)
    gate, _ = run(data({"error": {"code": 502, "message": "gone"}}), gate=gate)
    assert (gate.errored, gate.error_code) == (True, 502)


def test_text_that_mentions_done_or_a_finish_is_only_text() -> None:
    gate, actions = run(choice({"content": 'the [DONE] marker and "finish_reason": "stop"'}), gate=run(HI)[0])
    assert (gate.phase, gate.done, gate.finished) == (g.Phase.COMMITTED, False, False) and len(actions) == 1
    broken_frame = b'data: {"finish_reason": "stop"\n\n'  # not JSON: forwarded, changes nothing
    gate, actions = run(broken_frame, gate=gate)
    assert actions == [g.Send(broken_frame)] and not gate.finished


def test_the_fast_path_keeps_an_incomplete_event_for_later() -> None:
    committed, _ = run(HI)
    second = choice({"content": " there"})
    gate, actions = g.feed(committed, HI + second[:10])
    assert actions == [g.Send(HI)] and gate.pending == second[:10]
    gate, actions = g.feed(gate, second[10:])
    assert actions == [g.Send(second)] and gate.pending == b""
    assert g.feed(committed, second[:10]) == (g.Gate(**{**_fields(committed), "pending": second[:10]}), [])


def _fields(gate: g.Gate) -> dict[str, Any]:
    return {f: getattr(gate, f) for f in gate.__dataclass_fields__}


def test_a_last_event_without_its_blank_line_is_forwarded_at_the_end() -> None:
    last = choice({"content": "!"}, "stop").rstrip(b"\n")
    gate, actions = g.eof(g.feed(run(HI)[0], last)[0])
    assert actions == [g.Send(last + b"\n\n"), g.Send(b"data: [DONE]\n\n"), g.Finish()] and gate.pending == b""
    gate, actions = g.eof(g.feed(run(HI)[0], b"  \n")[0])
    assert gate.pending == b"" and gate.phase is g.Phase.CLOSED


# -- one event --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("delta", "kind"), [
    ({"role": "assistant"}, Kind.EMPTY),
    ({"role": "assistant", "content": ""}, Kind.EMPTY),
    ({"reasoning": "hmm"}, Kind.CONTENT),
    ({"reasoning_content": "hmm"}, Kind.CONTENT),
    ({"refusal": "No."}, Kind.CONTENT),
    ({"reasoning_details": [{"type": "reasoning.text", "text": "x"}]}, Kind.CONTENT),
], ids=["role", "empty-content", "reasoning", "reasoning-content", "refusal", "reasoning-details"])
def test_what_counts_as_output(delta: dict[str, Any], kind: Kind) -> None:
    assert classify(choice(delta))[0] is kind


def test_an_error_finish_without_an_error_object_is_an_error() -> None:
    assert classify(choice({}, "error"))[0] is Kind.ERROR


@pytest.mark.parametrize(("raw", "event"), [
    (b'data: {"a":1}\n\n', Chunk({"a": 1})), (b'data:{"a":1}\n\n', Chunk({"a": 1})),
    (b'data:  {"a":1}\n\n', Chunk({"a": 1})), (b'data: {"a":\ndata: 1}\n\n', Chunk({"a": 1})),
    (b'data: {"a":\rdata: 1}\r\r', Chunk({"a": 1})), (b": comment\n\n", None), (b"event: x\r\n\r\n", None),
])
def test_the_data_of_an_event(raw: bytes, event: object) -> None:
    assert read_event(raw) == event


def test_an_event_of_no_sse_lines_is_a_bad_frame() -> None:
    found = read_event(b"<html>\n\n")
    assert isinstance(found, BadFrame) and found.problem is FrameProblem.NOT_SSE


@pytest.mark.parametrize(("buffer", "end"), [
    (b"abc", 0), (b"\n\nabc", 2), (b"\n\r\nabc", 3), (b"a\n\nb\n\nc", 6), (b"a\r\n\r\nb\r\n\r\nc", 10),
    (b"a\n\r\nb\n\nc", 7), (b"a\r\rb", 3), (b"a\r\n\rb", 4), (b"a\r\nb", 0), (b"a\n\rb\r\r", 6),
])
def test_the_end_of_the_last_complete_event(buffer: bytes, end: int) -> None:
    assert last_boundary(buffer) == end


def test_a_finish_reason_and_the_usage_are_read_only_when_well_formed() -> None:
    assert finish_reason({"choices": [{"finish_reason": ""}, {"finish_reason": "stop"}]}) == "stop"
    assert finish_reason({"choices": ["x", {"finish_reason": None}]}) is None
    assert usage_tokens({"usage": {"prompt_tokens": 7, "completion_tokens": 3}}) == (7, 3)
    assert usage_tokens({"usage": {"prompt_tokens": 7}}) == (7, None)
    assert [usage_tokens(c) for c in ({"usage": {"prompt_tokens": True, "completion_tokens": "3"}},
                                      {"usage": {"prompt_tokens": "7"}}, {"usage": [1]}, None)] == [(None, None)] * 4


def test_an_upstreams_word_is_made_fit_for_a_label() -> None:
    assert reasons.clean_word("  Network Error!! ") == "network_error"
    assert reasons.clean_word("__x__") == "x" and reasons.clean_word("!!!") is None
    assert str(reasons.failed_check("Schema Violation")) == "failed_check_schema_violation"
    assert str(reasons.failed_check("")) == "failed_check_unknown"
    assert reasons.failed_check("bad_json_args").word == "bad_json_args"
