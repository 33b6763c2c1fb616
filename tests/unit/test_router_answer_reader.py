"""How the router reads an answer and a request (provider_canary/router/answer.py), field by field: the `Attempt` an
answer folds into (what the canary's judges then see), the `Expectations` a client's request makes (whatever shape
its `tools` and `response_format` have), when a non-streamed 200 is no answer, and which check says what."""

from __future__ import annotations

import json
from typing import Any

import pytest

import provider_canary.router.answer as a
from provider_canary.router.reasons import error_in_200
from tasks.core.live_records import LiveQuality
from tasks.core.types import Attempt, ErrorClass, ToolCall
from tasks.core.wire.sse import read_event, split_events

pytestmark = pytest.mark.unit

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PERSON = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}


def sse(*docs: dict[str, Any], done: bool = True, last_blank: bool = True) -> bytes:
    out = b"".join(b"data: " + json.dumps(d).encode() + b"\n\n" for d in docs)
    out += b"data: [DONE]\n\n" if done else b""
    return out if last_blank else out.rstrip(b"\n")


def delta(content: str | None = None, finish: str | None = None, native: str | None = None, **more: Any
          ) -> dict[str, Any]:
    d = {"content": content} if content is not None else {}
    return {"id": "g", "choices": [{"index": 0, "delta": d | more, "finish_reason": finish,
                                    "native_finish_reason": native}]}


def blank(**fields: Any) -> Attempt:
    """The attempt the reader makes: its identity fields blank, as documented."""
    return Attempt(round_id="live", model="", tag="", provider_name="", contract="live", attempt_no=1,
                   started_at=a._EPOCH, http_status=200, **fields)


# -- the attempt an answer folds into --------------------------------------------------------------------
def test_a_stream_folds_into_the_canarys_record_of_an_exchange() -> None:
    call = {"index": 0, "id": "call_7", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    raw = sse({"id": "g", "provider": "Alpha", "choices": [{"index": 0, "delta": {"role": "assistant"}}]},
              {"id": "g", "provider": "Beta", "choices": [{"index": 0, "delta": {"content": "Hi. "}}]},
              delta(tool_calls=[call]),
              delta(tool_calls=[{"index": 0, "function": {"arguments": '{"city": "Lisbon"}'}}]),
              delta(finish="tool_calls", native="tool_use"))
    assert a.read_stream(raw) == blank(
        chunk_count=5, finish_reason="tool_calls", native_finish_reason="tool_use", served_provider="Alpha",
        text="Hi. ", tool_calls=(ToolCall(0, "call_7", "get_weather", '{"city": "Lisbon"}'),))


def test_a_json_answer_without_a_finish_or_a_provider_leaves_them_unknown() -> None:
    assert a.read_json({"choices": [{"index": 0, "message": {"content": "Hi."}}]}) == blank(chunk_count=1, text="Hi.")
    reader = a.AnswerReader()
    assert (reader.finish_reason, reader.native_finish_reason, reader.provider, reader.error_code) == (None,) * 4
    assert reader.attempt() == blank()


def test_an_error_object_is_read_with_its_code_and_only_the_first_counts() -> None:
    raw = sse(delta("Part"), {"error": {"code": 502, "message": "gone"}}, {"error": {"code": 429, "message": "x"}})
    got = a.read_stream(raw)
    assert (got.error_class, got.error_code, got.text) == (ErrorClass.MIDSTREAM_ERROR, 502, "Part")


def test_the_last_event_without_its_blank_line_counts_unless_the_router_cut_what_it_kept() -> None:
    raw = sse(delta("Hello", finish="stop"), done=False, last_blank=False)
    assert a.read_stream(raw).text == "Hello" and a.read_stream(raw).finish_reason == "stop"
    assert a.read_stream(raw, cut=True) == blank(text_truncated=True)  # a piece of an event: nothing to read
    assert a.read_stream(sse(delta("Hi"), done=False) + b"data: {broken", cut=True).error_class is None


@pytest.mark.parametrize(("reader", "feed"), [
    (a.AnswerReader(cap_bytes=8), [delta("x" * 20, finish="stop")]),  # the text passed the cap
    (a.AnswerReader(cap_bytes=8), [delta(tool_calls=[{"index": 0, "id": "c", "function": {
        "name": "f", "arguments": "x" * 20}}], finish="tool_calls")]),  # a call's arguments passed it
], ids=["text", "tool-arguments"])
def test_an_answer_past_the_cap_is_marked_truncated(reader: a.AnswerReader, feed: list[dict[str, Any]]) -> None:
    events, _ = split_events(sse(*feed))
    reader.frames((len(raw), read_event(raw)) for raw in events)
    assert reader.attempt().text_truncated is True


def test_frames_past_the_kept_bytes_are_not_read_and_the_answer_is_cut() -> None:
    events, _ = split_events(sse(delta("Hello"), delta(" world"), delta(finish="stop")))
    frames = [(len(raw), read_event(raw)) for raw in events]
    reader = a.AnswerReader(keep_bytes=len(events[0]) + len(events[1]) - 1)
    reader.frames(frames[:1])
    reader.frames(frames[1:])
    assert (reader.attempt().text, reader.attempt().text_truncated, reader.finish_reason) == ("Hello", True, None)
    whole = a.AnswerReader(keep_bytes=sum(len(raw) for raw in events))
    whole.frames(frames)
    assert (whole.attempt().text, whole.attempt().text_truncated, whole.finish_reason) == ("Hello world", False, "stop")


# -- what the request expects ------------------------------------------------------------------------------
@pytest.mark.parametrize(("tools", "expected"), [
    (None, None),
    ("get_weather", None),
    ([], None),
    (["get_weather", {"function": "get_weather"}, {"function": {"name": 7}}, {"function": {"name": ""}}], None),
    ([{"function": {"name": "f", "parameters": WEATHER}}], {"f": WEATHER}),
    ([{"function": {"name": "f", "parameters": "no schema"}}, {"function": {"name": "g"}}], {"f": {}, "g": {}}),
], ids=["none", "a-string", "empty", "no-usable-name", "one", "without-a-schema"])
def test_the_requests_tools_whatever_their_shape(tools: Any, expected: dict[str, Any] | None) -> None:
    assert a.expectations(tools, None).tools == expected


@pytest.mark.parametrize(("response_format", "kind", "schema"), [
    ({"type": "json_object"}, "json_object", None),
    ({"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}}, "json_schema", PERSON),
    ({"type": "json_schema", "json_schema": {"name": "p"}}, None, None),  # no schema: nothing to check against
    ({"type": "json_schema", "json_schema": {"name": "p", "schema": "x"}}, None, None),
    ({"type": "json_schema", "json_schema": "p"}, None, None),
    ({"type": "text"}, None, None),
    ("json_object", None, None),
], ids=["object", "schema", "no-schema", "schema-not-an-object", "spec-not-an-object", "text", "a-string"])
def test_the_requests_response_format_whatever_its_shape(response_format: Any, kind: str | None,
                                                         schema: Any) -> None:
    assert a.expectations(None, response_format) == a.Expectations(None, kind, schema)


# -- no answer at all -------------------------------------------------------------------------------------
def answer_with_error(code: int, content: str | None) -> Attempt:
    return a.read_json({"error": {"code": code, "message": "x"},
                        "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": content}}]})


@pytest.mark.parametrize(("code", "content", "reason"), [
    (502, "The weather in Par", error_in_200(502)),  # partial text does not save a failed upstream
    (502, None, error_in_200(502)),
    (400, None, error_in_200(400)),  # nothing to hand over
    (400, "Hello.", None),  # a code not to try again, beside an answer: the answer stands
], ids=["5xx-partial", "5xx-empty", "4xx-empty", "4xx-with-text"])
def test_an_error_object_in_a_non_streamed_200(code: int, content: str | None, reason: Any) -> None:
    assert a.masked_failure(answer_with_error(code, content)) == reason


@pytest.mark.parametrize(("body", "doc"), [
    (b'{"id": "g"}', {"id": "g"}),
    (b"[1, 2]", None),
    (b"not json", None),
    (b"\xff\xfe", None),
    (b"[" * 100_000 + b"]" * 100_000, None),
])
def test_a_non_streamed_body_is_an_object_or_nothing(body: bytes, doc: Any) -> None:
    assert a.parse_json_answer(body) == doc


# -- which check says what ----------------------------------------------------------------------------------
def checks(attempt: Attempt, tools: Any = None, response_format: Any = None) -> dict[str, str]:
    return {str(v.quality): v.reason for v in a.check(attempt, a.expectations(tools, response_format))}


def test_a_structured_reply_broken_in_another_way_is_left_to_that_class() -> None:
    garbled = a.read_json({"choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"content": '{"age": "\ufffd"}'}}]})
    assert checks(garbled, response_format={"type": "json_object"}) == {"empty": "ok",
                                                                          "encoding": "encoding_corruption"}


def test_broken_bytes_in_tool_arguments_fail_the_encoding() -> None:
    call = {"index": 0, "id": "c", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "S\ufffdo Paulo"}'}}
    got = a.read_json({"choices": [{"index": 0, "finish_reason": "tool_calls",
                                    "message": {"content": "Checking.", "tool_calls": [call]}}]})
    tools = [{"function": {"name": "get_weather", "parameters": WEATHER}}]
    assert checks(got, tools) == {"empty": "ok", "tools": "ok", "encoding": "encoding_corruption"}


def test_a_check_result_passes_only_when_its_check_held() -> None:
    assert a.CheckResult(LiveQuality.TOOLS, "ok").passed
    assert not a.CheckResult(LiveQuality.TOOLS, "bad_json_args").passed


def test_the_text_and_the_tool_arguments_are_scanned_apart() -> None:
    """Two BPE space symbols are below the bar (three); the seam between the text and the arguments is a
    boundary, so a symbol at the end of the text is never read as standing before the arguments' first byte."""
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    got = a.read_json({"choices": [{"index": 0, "finish_reason": "tool_calls",
                                    "message": {"content": "oneĠtwoĠthreeĠ", "tool_calls": [call]}}]})
    assert checks(got, [{"function": {"name": "get_weather", "parameters": {}}}])["encoding"] == "ok"


def test_a_broken_last_piece_without_its_blank_line_is_dropped_as_the_gate_drops_it() -> None:
    # the gate never forwards a last piece that does not read whole: no protocol fault for what it dropped
    got = a.read_stream(sse(delta("Hi"), done=False) + b"data: {broken")
    assert (got.text, got.error_class, got.chunk_count) == ("Hi", None, 1)


BOM = b"\xef\xbb\xbf"


def test_a_bom_before_the_first_event_is_dropped_and_nowhere_else() -> None:
    # WHATWG: a UTF-8 BOM opens the stream only; the first event read is the one it precedes
    raw = BOM + sse(delta("Hel"), delta("lo", finish="stop"))
    got = a.read_stream(raw)
    assert (got.text, got.finish_reason, got.error_class, got.chunk_count) == ("Hello", "stop", None, 2)
    alone = a.read_stream(BOM + sse(delta("Hello", finish="stop"), done=False, last_blank=False))
    assert (alone.text, alone.error_class) == ("Hello", None)  # the only event, without its blank line
    # after a whole event the last piece is not the stream's first: a BOM there is no SSE at all, dropped
    later = a.read_stream(sse(delta("Hi"), done=False) + BOM + sse(delta("!"), done=False, last_blank=False))
    assert (later.text, later.error_class) == ("Hi", None)
