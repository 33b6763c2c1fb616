"""The incremental SSE parser (tasks/core/wire/sse.py `SSEParser`) at its edges, golden cases: a line or an
event of exactly `max_line_bytes` is kept and one byte more is not, on every way in (a piece without a line end,
a rest after one, a whole line, data lines adding up); what an over-long line leaves held (nothing) and how
reading resumes after it; a CR held between feeds; a BOM before the first line only; what `close()` makes of
what is left; every bad frame whole (problem, excerpt, head, size)."""

from __future__ import annotations

import pytest

from tasks.core.wire.sse import BOM, BadFrame, Chunk, Comment, FrameProblem, SSEEvent, SSEParser

pytestmark = pytest.mark.unit

CHUNK = b'data: {"a":1}'  # 13 bytes
PIECES = (b"{", b'"a"', b":", b"1", b"}")  # one chunk over five data lines: 2+4+2+2+2 = 12 bytes of data (+1 each)
MULTI = b"".join(b"data:" + p + b"\n" for p in PIECES) + b"\n"


def feed_all(parser: SSEParser, *parts: bytes) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    for part in parts:
        events += parser.feed(part)
    return events


def too_long(raw: bytes, size: int | None = None) -> BadFrame:
    return BadFrame(FrameProblem.LINE_TOO_LONG, raw.decode(), head=raw, size=size or len(raw))


@pytest.mark.parametrize("parts", [
    (CHUNK, b"\n\n"),  # a piece without a line end, then its end
    (b"\n" + CHUNK, b"\n\n"),  # the rest after a line end
    (CHUNK + b"\n\n",),  # a whole line
], ids=["piece", "rest", "line"])
def test_a_line_of_exactly_the_cap_is_kept_and_one_byte_more_is_not(parts: tuple[bytes, ...]) -> None:
    assert feed_all(SSEParser(max_line_bytes=len(CHUNK)), *parts) == [Chunk({"a": 1})]
    over = SSEParser(max_line_bytes=len(CHUNK) - 1)
    assert feed_all(over, *parts) == [too_long(CHUNK)]
    assert over.buffered_bytes == 0


def test_data_lines_adding_up_to_exactly_the_cap_are_kept_in_every_event() -> None:
    assert feed_all(SSEParser(max_line_bytes=12), MULTI + MULTI) == [Chunk({"a": 1}), Chunk({"a": 1})]
    over = SSEParser(max_line_bytes=11)  # the last piece passes it: reported once, with the bytes counted
    assert feed_all(over, MULTI + b"data:{}\n\n") == [too_long(b"}", size=12), Chunk({})]


def test_pieces_without_a_line_end_add_up_to_the_cap() -> None:
    p = SSEParser(max_line_bytes=13)
    assert feed_all(p, b"data:", b' {"a"', b":1}") == [] and p.buffered_bytes == 13
    assert feed_all(p, b"\n\n") == [Chunk({"a": 1})]
    over = SSEParser(max_line_bytes=12)
    assert feed_all(over, b"data:", b' {"a"') == [] and over.buffered_bytes == 10
    assert feed_all(over, b":1}") == [too_long(b'data: {"a":1}')]  # all it held, joined, as the evidence
    assert over.buffered_bytes == 0  # nothing held while the rest of the line is dropped
    assert feed_all(over, b"more of it", b"\ndata:{}\n\n") == [Chunk({})]


def test_an_over_long_rest_is_reported_and_its_tail_dropped_up_to_the_next_line_end() -> None:
    p = SSEParser(max_line_bytes=10)
    assert feed_all(p, b": ping\n" + b"x" * 11) == [Comment(" ping"), too_long(b"x" * 11)]
    assert p.buffered_bytes == 0
    assert feed_all(p, b"still\r") == [] and p.buffered_bytes == 1  # only the CR that may start a CRLF
    assert feed_all(p, b"\ndata:{}\n", b"\n") == [Chunk({})]


def test_reading_resumes_at_the_line_after_an_over_long_one_even_when_split() -> None:
    p = SSEParser(max_line_bytes=13)
    assert feed_all(p, b"x" * 14) == [too_long(b"x" * 14)]
    assert feed_all(p, b'tail\ndata: {"a"', b":1}\n\n") == [Chunk({"a": 1})]


def test_an_over_long_line_within_one_feed_is_reported_whole() -> None:
    line = b"data: " + b"y" * 20
    assert SSEParser(max_line_bytes=13).feed(line + b'\n\ndata: {"a":1}\n\n') == [too_long(line), Chunk({"a": 1})]


def test_a_cr_held_between_feeds_ends_its_line_when_no_lf_follows() -> None:
    p = SSEParser()
    assert p.feed(b'data: {"a":1}\r') == [] and p.buffered_bytes == len(b'data: {"a":1}\r')
    assert p.feed(b'\rdata: {"b":2}\r\n\r\n') == [Chunk({"a": 1}), Chunk({"b": 2})]


def test_a_bom_is_dropped_before_the_first_line_only() -> None:
    wire = BOM + b'data: {"a":1}\n\n' + BOM + b'data: {"b":2}\n\n'
    second = (BOM + b'data: {"b":2}').decode()
    assert SSEParser().feed(wire) == [
        Chunk({"a": 1}), BadFrame(FrameProblem.NOT_SSE, second, head=BOM + b'data: {"b":2}', size=len(second) + 2)]


def test_a_comment_keeps_its_text_and_bad_bytes_in_it_are_replaced() -> None:
    assert SSEParser().feed(b": caf\xc3\xa9 \xff ping\n") == [Comment(" café \ufffd ping")]


@pytest.mark.parametrize(("wire", "frame"), [
    (b"<!DOCTYPE html>\n", BadFrame(FrameProblem.NOT_SSE, "<!DOCTYPE html>", head=b"<!DOCTYPE html>", size=15)),
    (b"data: [1, 2]\n\n", BadFrame(FrameProblem.NOT_OBJECT, "[1, 2]", head=b"[1, 2]", size=6)),
    (b"data: {bad\n\n", BadFrame(FrameProblem.NOT_JSON, "{bad", head=b"{bad", size=4)),
    (b"data: {\xff\n\n", BadFrame(FrameProblem.INVALID_UTF8, "{\ufffd", head=b"{\xff", size=2)),
    (b'data: {"a":"\xff"}\n\n',
     BadFrame(FrameProblem.INVALID_UTF8, '{"a":"\ufffd"}', chunk={"a": "\ufffd"}, head=b'{"a":"\xff"}', size=9)),
], ids=["not-sse", "not-object", "not-json", "invalid-utf8", "invalid-utf8-chunk"])
def test_a_bad_frame_is_reported_whole(wire: bytes, frame: BadFrame) -> None:
    assert SSEParser().feed(wire) == [frame]


# -- close(): the end of the stream ------------------------------------------------------------------------
def test_a_last_line_cut_by_the_end_is_incomplete_with_its_evidence() -> None:
    p = SSEParser()
    assert p.feed(b'data: {"a": 1') == []
    assert p.close() == [BadFrame(FrameProblem.INCOMPLETE, '{"a": 1', head=b'{"a": 1', size=7)]
    assert p.buffered_bytes == 0


@pytest.mark.parametrize(("wire", "value"), [
    (b"data: {bad\r", b"{bad"), (b"data: {bad \r", b"{bad "), (b"data: {badX\r", b"{badX"),
], ids=["cr", "space-cr", "x-cr"])
def test_a_held_cr_at_the_end_is_a_line_end_not_part_of_the_line(wire: bytes, value: bytes) -> None:
    p = SSEParser()
    assert p.feed(wire) == []  # the CR is held: it may be the first half of a CRLF
    assert p.close() == [BadFrame(FrameProblem.NOT_JSON, value.decode(), head=value, size=len(value))]


def test_a_whole_last_line_without_its_blank_line_is_read_as_it_is() -> None:
    p = SSEParser()
    assert p.feed(b"data: {bad\n") == []
    assert p.close() == [BadFrame(FrameProblem.NOT_JSON, "{bad", head=b"{bad", size=4)]


def test_a_last_data_line_without_its_line_end_ends_the_event_it_continues() -> None:
    p = SSEParser()
    assert p.feed(b'data: {"a":\ndata: 1}') == []
    assert p.close() == [Chunk({"a": 1})]  # one event of two data lines, not a blank line between them


def test_a_comment_cut_by_the_end_is_dropped() -> None:
    p = SSEParser()
    assert p.feed(b'data: {"a":1}\n\n: OPENROUTER PROCESS') == [Chunk({"a": 1})]
    assert p.close() == []


def test_close_lets_go_of_an_over_long_line_and_a_feed_after_it_starts_on_a_line() -> None:
    p = SSEParser(max_line_bytes=13)
    assert feed_all(p, b"x" * 14) == [too_long(b"x" * 14)]
    assert p.close() == [] and p.buffered_bytes == 0
    assert p.feed(b'data: {"a":1}\n\n') == [Chunk({"a": 1})]


@pytest.mark.parametrize("parts", [
    (b'data: {"a":1}\r\r', b'data: {"b":2}'),  # a blank line ended by a held CR, then the last line's pieces
    (b'data: {"a":1}\r', b"\r", b'data: {"b":2}'),
    (b'data: {"a":1}\r\rdata: {"b":2}',),
], ids=["held-cr-then-piece", "cr-alone", "one-feed"])
def test_a_held_cr_ends_its_line_at_the_end_of_the_stream_wherever_the_bytes_were_split(
        parts: tuple[bytes, ...]) -> None:
    p = SSEParser()
    assert feed_all(p, *parts) + p.close() == [Chunk({"a": 1}), Chunk({"b": 2})]


@pytest.mark.parametrize(("lf", "cr"), [
    (b"data: {bad\n", b"data: {bad\r"),  # a whole line that is no JSON: not cut by the end
    (b": ping\n", b": ping\r"),  # a whole comment is one (a keep-alive counted)
    (b'data: {"a":1}\n', b'data: {"a":1}\r'),
], ids=["not-json", "comment", "chunk"])
def test_a_last_line_ended_by_a_bare_cr_reads_as_one_ended_by_lf(lf: bytes, cr: bytes) -> None:
    by_lf, by_cr = SSEParser(), SSEParser()
    assert by_cr.feed(cr) + by_cr.close() == by_lf.feed(lf) + by_lf.close()
