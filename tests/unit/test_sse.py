"""tasks.core.wire.sse: the sans-I/O SSE parser and the chunk readers.

Example tests pin the wire forms of docs/openrouter-api.md section 3; Hypothesis checks that the events do
not depend on where the bytes were split (h2/h11 style: talk about general behaviours).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.core.wire.chunks import (
    chunk_error,
    chunk_finish,
    chunk_has_text,
    chunk_provider,
    delta_text,
    first_text_chunk,
    is_first_text_chunk,
    one_line,
)
from tasks.core.wire.sse import BadFrame, Chunk, Comment, Done, FrameProblem, SSEEvent, SSEParser, escape_bytes

pytestmark = pytest.mark.unit


def _chunk(
    content: str | None = "Hi", *, role: bool = True, finish: str | None = None, **extra: object
) -> dict:
    delta: dict[str, object] = {}
    if content is not None:
        delta["content"] = content
    if role:
        delta["role"] = "assistant"
    return {
        "id": "gen-1778031306-UD7bR0I1JNCsPvVzlXat",
        "object": "chat.completion.chunk",
        "created": 1778031306,
        "model": "openai/gpt-4o-mini",
        "provider": "Azure",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish}],
        **extra,
    }


def _frame(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


#: The recorded stream of docs/openrouter-api.md section 3b, shortened: comment, text, finish, usage, DONE.
RECORDED = (
    b": OPENROUTER PROCESSING\n\n"
    + _frame(_chunk("Hello"))
    + _frame(_chunk("!"))
    + _frame(_chunk("", finish="stop"))
    + _frame(_chunk("", finish="stop", usage={"prompt_tokens": 21, "completion_tokens": 3}))
    + b"data: [DONE]\n\n"
)


def parse_all(data: bytes, splits: list[int] | None = None, **kw: int) -> list[SSEEvent]:
    parser = SSEParser(**kw)
    events: list[SSEEvent] = []
    cuts = sorted(set(splits or []))
    prev = 0
    for cut in [*cuts, len(data)]:
        events += parser.feed(data[prev:cut])
        prev = cut
    return events + parser.close()


def kinds(events: list[SSEEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_recorded_stream_parses_to_comment_chunks_done() -> None:
    events = parse_all(RECORDED)
    assert kinds(events) == ["Comment", "Chunk", "Chunk", "Chunk", "Chunk", "Done"]
    assert events[0] == Comment(" OPENROUTER PROCESSING")
    assert isinstance(events[1], Chunk) and delta_text(events[1].data) == ("Hello", "")


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        pytest.param(b'data: {"a":1}\r\n\r\n', [Chunk({"a": 1})], id="crlf"),
        pytest.param(b'data: {"a":1}\r\rdata: [DONE]\r\r', [Chunk({"a": 1}), Done()], id="bare-cr"),
        pytest.param(b'data:{"a":1}\n\n', [Chunk({"a": 1})], id="no-space-after-colon"),
        pytest.param(b'data: {"a":\ndata: 1}\n\n', [Chunk({"a": 1})], id="multi-line-data-joined"),
        pytest.param(b"data: [DONE]\n\n", [Done()], id="done"),
        pytest.param(b'event: x\nid: 7\nretry: 5\ndata: {"a":1}\n\n', [Chunk({"a": 1})], id="other-fields"),
        pytest.param(b"\n\n\n", [], id="bare-blank-lines"),
        pytest.param(b'data: {"a":1}\n', [Chunk({"a": 1})], id="eof-flushes-event"),
        pytest.param(b'data: {"a":1}', [Chunk({"a": 1})], id="eof-without-line-end-but-whole"),
    ],
)
def test_framing(wire: bytes, expected: list[SSEEvent]) -> None:
    assert parse_all(wire) == expected


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        pytest.param(b"data: not json\n\n", FrameProblem.NOT_JSON, id="not-json"),
        pytest.param(b"data: [1, 2]\n\n", FrameProblem.NOT_OBJECT, id="array"),
        pytest.param(b'data: "text"\n\n', FrameProblem.NOT_OBJECT, id="string"),
        pytest.param(b"data: \xff\xfe garbage\n\n", FrameProblem.INVALID_UTF8, id="invalid-utf8-not-json"),
        pytest.param(
            b'data: {"choices":[{"delta":{"content":"ab', FrameProblem.INCOMPLETE, id="cut-mid-json"
        ),
        pytest.param(b"data: " + b"[" * 100_000 + b"\n\n", FrameProblem.NOT_JSON, id="deep-nesting"),
    ],
)
def test_bad_frames_are_reported_not_raised(wire: bytes, problem: FrameProblem) -> None:
    events = parse_all(wire)
    assert len(events) == 1
    assert isinstance(events[0], BadFrame) and events[0].problem == problem
    assert len(events[0].raw) <= 200


def test_invalid_utf8_inside_json_string_keeps_the_chunk_with_replacement_chars() -> None:
    wire = b'data: {"choices":[{"delta":{"content":"caf\xc3 ok"}}]}\n\n'
    [event] = parse_all(wire)
    assert isinstance(event, BadFrame) and event.problem == FrameProblem.INVALID_UTF8
    assert event.chunk is not None
    assert delta_text(event.chunk)[0] == "caf\ufffd ok"
    assert is_first_text_chunk(event)


def test_multibyte_character_split_across_feeds_is_not_corrupted() -> None:
    wire = _frame(_chunk("Olá, 世界"))
    cut = wire.index("世".encode()) + 1  # inside the 3-byte character
    [event] = parse_all(wire, [cut])
    assert isinstance(event, Chunk) and delta_text(event.data)[0] == "Olá, 世界"


def test_crlf_split_between_cr_and_lf_is_one_line_end() -> None:
    wire = b'data: {"a":\r\ndata: 1}\r\n\r\n'
    for cut in range(len(wire) + 1):
        assert parse_all(wire, [cut]) == [Chunk({"a": 1})], cut


def test_over_long_line_is_dropped_and_flagged_once_then_parsing_resumes() -> None:
    wire = b"data: " + b"x" * 5000 + b"\n\n" + _frame({"a": 1})
    events = parse_all(wire, list(range(0, len(wire), 97)), max_line_bytes=1000)
    assert kinds(events) == ["BadFrame", "Chunk"]
    assert isinstance(events[0], BadFrame) and events[0].problem == FrameProblem.LINE_TOO_LONG
    assert events[1] == Chunk({"a": 1})


def test_over_long_multi_line_event_is_dropped() -> None:
    wire = b"data: 12345678\n" * 200 + b"\n" + _frame({"a": 1})
    events = parse_all(wire, max_line_bytes=1000)
    assert kinds(events) == ["BadFrame", "Chunk"]


def test_memory_stays_bounded_under_a_huge_line_and_endless_keepalives() -> None:
    parser = SSEParser(max_line_bytes=4096)
    high_water = 0
    flagged = 0
    for _ in range(2000):  # ~8 MB of one line
        flagged += sum(isinstance(e, BadFrame) for e in parser.feed(b"y" * 4000))
        high_water = max(high_water, parser.buffered_bytes)
    comments = 0
    for _ in range(20_000):
        comments += len(parser.feed(b"\n: OPENROUTER PROCESSING\n"))
        high_water = max(high_water, parser.buffered_bytes)
    assert flagged == 1
    assert comments == 20_000
    assert high_water <= 2 * 4096


def test_invalid_utf8_frame_keeps_its_first_bytes_as_evidence() -> None:
    wire = b'data: {"choices":[{"delta":{"content":"\xff\xfe"}}]}\n\n'
    [event] = parse_all(wire)
    assert isinstance(event, BadFrame) and event.problem == FrameProblem.INVALID_UTF8
    assert event.head.startswith(b'{"choices"') and event.size == len(wire) - len(b"data: \n\n")
    assert "\\xff\\xfe" in escape_bytes(event.head)


def test_a_twenty_megabyte_line_is_flagged_as_soon_as_it_passes_the_cap() -> None:
    """The reader can stop at the first LINE_TOO_LONG: it comes one piece past the cap, not at the end."""
    cap, piece = 64 * 1024, b"x" * 65536
    parser = SSEParser(max_line_bytes=cap)
    fed = len(b'data: {"a":"')
    events = parser.feed(b'data: {"a":"')
    while not events and fed < 20_000_000:
        events = parser.feed(piece)
        fed += len(piece)
        assert parser.buffered_bytes <= cap
    [event] = events
    assert isinstance(event, BadFrame) and event.problem == FrameProblem.LINE_TOO_LONG
    assert fed <= cap + len(piece) and event.size == fed and event.head.startswith(b'data: {"a":"xx')
    more = [parser.feed(piece) for _ in range(10)] + [parser.feed(b'"}\n\n' + _frame({"b": 1}))]
    assert [e for batch in more for e in batch] == [Chunk({"b": 1})]  # the rest of the line is dropped


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n</html>\n", id="html"
        ),
        pytest.param(b"upstream connect error or disconnect/reset before headers\n", id="plain-text"),
        pytest.param(b"<html><body>no newline at all</body></html>", id="html-unterminated"),
    ],
)
def test_a_body_that_is_no_event_stream_is_flagged_once(body: bytes) -> None:
    events = parse_all(body + body, list(range(0, 2 * len(body), 7)))
    assert len(events) == 1
    assert isinstance(events[0], BadFrame) and events[0].problem == FrameProblem.NOT_SSE
    assert (body + body).startswith(events[0].head) and events[0].size > 0


def test_known_sse_fields_comments_and_a_leading_bom_are_not_flagged() -> None:
    wire = (
        b"\xef\xbb\xbfevent: message\nid: 7\nretry: 100\ndata\n: ping\n"
        + _frame({"a": 1})
        + b"data: [DONE]\n\n"
    )
    assert parse_all(wire, list(range(0, len(wire), 2))) == [Comment(" ping"), Chunk({"a": 1}), Done()]
    assert parse_all(b"\xef\xbb\xbf: ping\n") == [Comment(" ping")]


def test_escape_bytes_is_one_printable_line() -> None:
    assert escape_bytes(b"caf\xc3\xa9 \xc3( \n\x00 <b>") == "café \\xc3( \\n\\x00 <b>"
    assert escape_bytes(b"y" * 100, limit=10) == "y" * 10 + "…"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(RECORDED)), max_size=12))
def test_events_do_not_depend_on_split_points(splits: list[int]) -> None:
    assert parse_all(RECORDED, splits) == parse_all(RECORDED)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_arbitrary_bytes_never_raise_and_split_points_do_not_matter(data: bytes, splits: list[int]) -> None:
    splits = [s for s in splits if s <= len(data)]
    events = parse_all(data, splits, max_line_bytes=64)
    assert events == parse_all(data, max_line_bytes=64)
    for event in events:
        assert isinstance(event, Comment | Chunk | Done | BadFrame)


# --- chunk readers -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk", "text", "counts"),
    [
        pytest.param(_chunk("Hello"), ("Hello", ""), True, id="content"),
        pytest.param(_chunk("*She smiles*"), ("*She smiles*", ""), True, id="emphasis-action"),
        pytest.param(_chunk(""), ("", ""), False, id="empty-content"),
        pytest.param(_chunk(None), ("", ""), False, id="role-only"),
        pytest.param(
            {"choices": [{"delta": {"role": "assistant", "content": "", "reasoning": "Let me think"}}]},
            ("", "Let me think"),
            True,
            id="reasoning-only",
        ),
        pytest.param(
            {"choices": [{"delta": {"reasoning_content": "hmm"}}]}, ("", "hmm"), True, id="reasoning-content"
        ),
        pytest.param(
            {"choices": [{"delta": {"content": None, "tool_calls": []}}]}, ("", ""), False, id="null"
        ),
        pytest.param({"choices": []}, ("", ""), False, id="no-choices"),
        pytest.param({"choices": "junk"}, ("", ""), False, id="choices-not-a-list"),
        pytest.param({"choices": [{"delta": {"content": 5}}]}, ("", ""), False, id="content-not-a-string"),
        pytest.param({"choices": [{"message": {"content": "Hi"}}]}, ("Hi", ""), True, id="non-streaming"),
        pytest.param({"choices": [{"delta": {"content": "", "refusal": "No."}}]}, ("No.", ""), True, id="refusal"),
        pytest.param(
            {"choices": [{"delta": {"reasoning_details": [{"type": "reasoning.encrypted", "data": "gAAA"}]}}]},
            ("", ""), True, id="reasoning-details-only",
        ),
        pytest.param(
            {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "f"}}]}}]}, ("", ""), False,
            id="tool-call-only",
        ),
    ],
)
def test_delta_text_and_first_text(chunk: dict, text: tuple[str, str], counts: bool) -> None:
    assert delta_text(chunk) == text
    assert chunk_has_text(chunk) is counts
    assert is_first_text_chunk(Chunk(chunk)) is counts


def test_first_text_chunk_skips_comments_role_only_and_empty_deltas() -> None:
    wire = (
        b": OPENROUTER PROCESSING\n\n\n\n"
        + _frame(_chunk(None))
        + _frame(_chunk(""))
        + b": OPENROUTER PROCESSING\n\n"
        + _frame(_chunk("*He"))
        + _frame(_chunk(" nods*"))
    )
    events = parse_all(wire)
    first = first_text_chunk(events)
    assert isinstance(first, Chunk) and delta_text(first.data)[0] == "*He"
    assert not any(
        is_first_text_chunk(e) for e in (Comment(" x"), Done(), BadFrame(FrameProblem.NOT_JSON, "x"))
    )
    assert first_text_chunk(parse_all(b": only keep-alives\n\n" * 3)) is None


@pytest.mark.parametrize(
    ("chunk", "expected"),
    [
        pytest.param(
            {"error": {"code": 429, "message": "Rate limit\nexceeded"}},
            (429, "Rate limit exceeded"),
            id="int",
        ),
        pytest.param({"error": {"code": "502", "message": "bad"}}, (502, "bad"), id="digit-string"),
        pytest.param(
            {"error": {"code": "server_error", "message": "x"}}, (None, "server_error: x"), id="string"
        ),
        pytest.param({"error": "boom"}, (None, "boom"), id="not-an-object"),
        pytest.param({"error": {"code": True}}, (None, ""), id="bool-is-not-a-code"),
        pytest.param(_chunk("x"), None, id="no-error"),
    ],
)
def test_chunk_error(chunk: dict, expected: tuple[int | None, str] | None) -> None:
    assert chunk_error(chunk) == expected


def test_chunk_finish_and_provider() -> None:
    assert chunk_finish(_chunk("", finish="stop")) == ("stop", "stop")
    assert chunk_finish(_chunk("x")) == (None, None)
    native_only = {"choices": [{"delta": {}, "finish_reason": None, "native_finish_reason": "SAFETY"}]}
    assert chunk_finish(native_only) == (None, "SAFETY")
    assert chunk_provider(_chunk("x")) == "Azure"
    assert chunk_provider({"provider": 3}) is None


def test_one_line() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    assert len(one_line("x" * 1000, limit=50)) == 50
