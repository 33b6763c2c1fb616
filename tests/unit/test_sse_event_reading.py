"""Reading one whole event (tasks/core/wire/sse.py `split_events`, `read_event`, `line_field`), golden cases at
the edges the router's gate meets: a BOM before the stream's first event only, a CRLF split between its CR and
its LF (the next event opens with the LF), the payload cap (a payload of `max_bytes` is over it), the one
space after `data:`, the bytes a bad frame keeps; and `escape_bytes`' limit."""

from __future__ import annotations

import pytest

from tasks.core.wire.sse import (
    BOM,
    BadFrame,
    Chunk,
    Field,
    FrameProblem,
    escape_bytes,
    line_field,
    read_event,
    split_events,
)

pytestmark = pytest.mark.unit

EVENT = b'data: {"a":1}\n\n'


def test_a_bom_is_dropped_before_the_streams_first_event_only() -> None:
    assert read_event(BOM + EVENT, first=True) == Chunk({"a": 1})
    line = BOM + EVENT.rstrip()
    assert read_event(BOM + EVENT) == BadFrame(FrameProblem.NOT_SSE, line.decode(), head=line, size=len(line))


def test_a_crlf_split_between_its_cr_and_lf_loses_no_event() -> None:
    first, rest = split_events(b'data: {"a":1}\r\r')  # the CR of a CRLF ends the event at the buffer's end
    assert (first, rest) == ([b'data: {"a":1}\r\r'], b"")
    second, rest = split_events(b'\ndata: {"b":2}\r\n\r\n')  # its LF opens the next event as an empty line
    assert rest == b"" and [read_event(e) for e in first + second] == [Chunk({"a": 1}), Chunk({"b": 2})]


def test_an_empty_event_at_the_start_of_a_buffer_is_an_event() -> None:
    assert split_events(b"\n\n" + EVENT) == ([b"\n\n", EVENT], b"")
    assert read_event(b"\n\n") is None


@pytest.mark.parametrize("raw", [b"data: {bad\n\n", b"data:{bad\n\n", b"data: {bad\r\n\r\n", b": c\ndata: {bad\n\n"],
                         ids=["space", "no-space", "crlf", "two-lines"])
def test_one_space_after_data_is_dropped_and_the_bad_frame_keeps_the_payload(raw: bytes) -> None:
    assert read_event(raw) == BadFrame(FrameProblem.NOT_JSON, "{bad", head=b"{bad", size=4)


@pytest.mark.parametrize(("raw", "payload"), [
    (b"data:  {bad\n\n", b" {bad"),  # a second space is the payload's
    (b"data: {bad  \n\n", b"{bad  "),  # trailing spaces too
    (b"data: {badX\n\n", b"{badX"),
], ids=["two-spaces", "trailing-spaces", "trailing-x"])
def test_the_payload_is_kept_to_its_last_byte_before_the_line_end(raw: bytes, payload: bytes) -> None:
    assert read_event(raw) == BadFrame(FrameProblem.NOT_JSON, payload.decode(), head=payload, size=len(payload))


@pytest.mark.parametrize(("raw", "payload"), [
    (EVENT, b'{"a":1}'),
    (b'data: {"a":\r\ndata: 1}\r\n\r\n', b'{"a":\n1}'),  # data lines joined with LF
], ids=["one-line", "two-lines"])
def test_a_payload_of_max_bytes_is_over_the_cap(raw: bytes, payload: bytes) -> None:
    assert read_event(raw, max_bytes=len(payload) + 1) == Chunk({"a": 1})
    over = BadFrame(FrameProblem.LINE_TOO_LONG, payload.decode(), head=payload, size=len(payload))
    assert read_event(raw, max_bytes=len(payload)) == over


@pytest.mark.parametrize(("line", "field"), [
    (b"event: a:b", (Field.OTHER, b"")),  # the field name is what comes before the first colon
    (b"id:1", (Field.OTHER, b"")),
    (b"retry: 10", (Field.OTHER, b"")),
    (b"data: x:y", (Field.DATA, b"x:y")),
    (b"<p>a:b</p>", (Field.FOREIGN, b"<p>a:b</p>")),
])
def test_line_field(line: bytes, field: tuple[Field, bytes]) -> None:
    assert line_field(line) == field


def test_escape_bytes_cuts_past_its_limit_only() -> None:
    assert escape_bytes(b"x" * 80) == "x" * 80
    assert escape_bytes(b"x" * 81) == "x" * 80 + "…"
    assert escape_bytes(b"ab\xffc", limit=3) == "ab\\xff…"
