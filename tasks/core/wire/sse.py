"""Server-sent events, sans I/O: bytes in, events out (docs/openrouter-api.md section 3).

Like h11, this module does no I/O. `SSEParser.feed(data)` takes raw bytes split anywhere (mid-line, mid-UTF-8
character, mid-CRLF) and returns the events completed so far; `close()` flushes what the end of the stream
completes. Events:

* ``Comment``   a line starting with ``:`` (OpenRouter's ``: OPENROUTER PROCESSING`` keep-alive)
* ``Chunk``     a ``data:`` event holding a JSON object (one ``chat.completion.chunk``)
* ``Done``      ``data: [DONE]``
* ``BadFrame``  a ``data:`` event that is not a JSON object, a line over the length cap (discarded), a frame
                with invalid UTF-8 (decoded with U+FFFD; ``chunk`` keeps what could still be parsed), a
                partial line cut by the end of the stream, or a line that is no SSE field at all (``NOT_SSE``,
                reported once per stream: an HTML page served as an event stream). ``head`` keeps the first
                bytes as evidence (`escape_bytes` makes them one printable line), ``size`` the byte count.

Line ends are ``\\n``, ``\\r\\n`` or a bare ``\\r`` (WHATWG). Consecutive ``data:`` lines of one event are
joined with ``\\n``; a blank line ends the event. Memory is bounded by ``max_line_bytes`` whatever the peer
sends: an over-long line or event is dropped and reported once, and keep-alives are never stored.

Two ways in, one set of rules (line ends, fields, the data payload): `SSEParser` reads a stream line by line
as it arrives (the probe: an event's comments are counted as they come, memory bounded per line);
`split_events` cuts a buffer into whole events with their bytes untouched and `read_event` says what one whole
event carries (the router's gate: it forwards each event byte for byte once it knows what it is). Both end a
line at CRLF, a bare LF or a bare CR, both read fields with `line_field` and a payload with `parse_data`.

Reading a chunk once parsed (deltas, errors, finish reasons) is tasks/core/wire/chunks.py's business.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: Longest line (and longest multi-line ``data:`` event) kept, in bytes. A real chunk is a few hundred bytes;
#: 1 MiB leaves room for huge tool-call deltas while bounding what a broken peer can make us hold.
DEFAULT_MAX_LINE_BYTES = 1024 * 1024
#: Characters of a bad frame kept in `BadFrame.raw` (evidence, not a copy).
BAD_FRAME_EXCERPT_CHARS = 200
#: Bytes of a bad frame kept in `BadFrame.head`.
BAD_FRAME_HEAD_BYTES = 120
#: SSE field names (WHATWG); a line naming none of them (and no comment) is not SSE.
SSE_FIELDS = frozenset({b"data", b"event", b"id", b"retry"})
DONE_MARKER = "[DONE]"
BOM = b"\xef\xbb\xbf"
_decode = json.JSONDecoder().decode  # json.loads without its per-call keyword checks
#: A blank line: a line end (CRLF, else a bare CR or LF) followed by another; it ends an event.
_BLANK_LINE = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")


class FrameProblem(StrEnum):
    NOT_JSON = "not_json"
    NOT_OBJECT = "not_object"
    INVALID_UTF8 = "invalid_utf8"
    LINE_TOO_LONG = "line_too_long"
    INCOMPLETE = "incomplete"  # the stream ended inside a line
    NOT_SSE = "not_sse"  # a line that is neither a comment nor an SSE field (e.g. `<!DOCTYPE html>`)


@dataclass(frozen=True, slots=True)
class Comment:
    text: str


@dataclass(frozen=True, slots=True)
class Chunk:
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Done:
    pass


@dataclass(frozen=True, slots=True)
class BadFrame:
    problem: FrameProblem
    raw: str  # an excerpt of the frame, at most BAD_FRAME_EXCERPT_CHARS characters
    chunk: dict[str, Any] | None = None  # INVALID_UTF8 only: the chunk, if it still parsed after replacement
    head: bytes = b""  # the frame's (or line's) first BAD_FRAME_HEAD_BYTES bytes, as received
    size: int = 0  # bytes of the frame; LINE_TOO_LONG: bytes of the line seen when it was given up


SSEEvent = Comment | Chunk | Done | BadFrame
#: What one whole event carries (`read_event`): its comments are not kept.
Event = Chunk | Done | BadFrame


class SSEParser:
    """Incremental SSE parser. Not thread-safe; one per stream.

    >>> p = SSEParser()
    >>> p.feed(b': OPENROUTER PROCESSING\\n\\ndata: {"a"') + p.feed(b': 1}\\n\\n')
    [Comment(text=' OPENROUTER PROCESSING'), Chunk(data={'a': 1})]
    """

    def __init__(self, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._max = max_line_bytes
        self._buf: list[bytes] = []  # pieces of an incomplete line (joined only once a line end arrives)
        self._buf_bytes = 0  # never more than max_line_bytes (+1 held CR)
        self._discarding = False  # inside an over-long line: drop bytes up to the next line end
        self._data: list[bytes] = []  # data: lines of the event being built
        self._data_bytes = 0
        self._event_too_long = False
        self._foreign_seen = False  # a NOT_SSE line was reported (once per stream)
        self._first_line = True  # a UTF-8 BOM before the first line is dropped (WHATWG)

    @property
    def buffered_bytes(self) -> int:
        """Bytes held between feeds (a partial line plus the event being built): bounded by max_line_bytes."""
        return self._buf_bytes + self._data_bytes

    def feed(self, data: bytes) -> list[SSEEvent]:
        if not data:
            return []
        if b"\n" not in data and b"\r" not in data:  # mid-line: no copy of what is already held
            if self._discarding:
                return []
            if self._buf_bytes + len(data) > self._max:
                self._discarding = True
                held, self._buf, self._buf_bytes = b"".join(self._buf), [], 0
                return [_too_long(held + data)]
            self._buf.append(data)
            self._buf_bytes += len(data)
            return []
        buf = b"".join(self._buf) + data
        # A trailing CR may be the first half of CRLF: keep it until the next byte shows which it is.
        hold_cr = buf.endswith(b"\r")
        if hold_cr:
            buf = buf[:-1]
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        events: list[SSEEvent] = []
        last_nl = buf.rfind(b"\n")
        if last_nl < 0:
            rest = buf
        else:
            lines = buf[:last_nl].split(b"\n")
            rest = buf[last_nl + 1 :]
            if self._discarding:
                self._discarding = False
                lines = lines[1:]  # the tail of the over-long line
            for line in lines:
                self._line(line, events)
        if self._discarding:
            rest = b""
        elif len(rest) > self._max:
            self._discarding = True
            events.append(_too_long(rest))
            rest = b""
        tail = rest + (b"\r" if hold_cr else b"")
        self._buf, self._buf_bytes = ([tail] if tail else []), len(tail)
        return events

    def close(self) -> list[SSEEvent]:
        """The stream ended: flush the pending event. A last line without its line end is still read, but
        if it does not parse it is reported as INCOMPLETE (the end cut it), not as NOT_JSON."""
        # A held CR ended its line (a bare CR is a line end: no LF came to make it a CRLF), and the pieces fed
        # after it are the last line: the CR's line is read as `feed` reads an ended line.
        ended, cr, rest = b"".join(self._buf).rpartition(b"\r")
        self._buf, self._buf_bytes = [], 0
        done = self.feed(ended + b"\n") if cr else []
        events: list[SSEEvent] = []
        cut = bool(rest) and not self._discarding and not rest.startswith(b":")
        self._discarding = False
        if cut:
            self._line(rest, events)
        self._dispatch(events)
        last = events[-1] if events else None
        if cut and isinstance(last, BadFrame) and last.chunk is None and last.problem != FrameProblem.NOT_SSE:
            events[-1] = BadFrame(FrameProblem.INCOMPLETE, last.raw, head=last.head, size=last.size)
        return done + events

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if self._first_line:
            self._first_line = False
            line = line.removeprefix(BOM)
        if not line:
            self._dispatch(events)
            return
        if len(line) > self._max:
            events.append(_too_long(line))
            return
        kind, value = line_field(line)
        if kind is Field.COMMENT:
            events.append(Comment(value.decode("utf-8", "replace")))
        elif kind is Field.DATA:
            self._data_bytes += len(value) + 1
            if self._data_bytes > self._max:
                if not self._event_too_long:
                    events.append(_too_long(value, self._data_bytes))
                self._event_too_long = True
                self._data.clear()
            else:
                self._data.append(value)
        elif kind is Field.FOREIGN and not self._foreign_seen:
            self._foreign_seen = True
            events.append(_foreign(line))
        # other fields (event:, id:, retry:) carry nothing OpenRouter uses

    def _dispatch(self, events: list[SSEEvent]) -> None:
        data, self._data, self._data_bytes = self._data, [], 0
        if self._event_too_long:
            self._event_too_long = False
            return
        if data:
            events.append(parse_data(b"\n".join(data)))


class Field(StrEnum):
    """What one non-blank line is (WHATWG field rules)."""

    COMMENT = "comment"  # `:` and a text (OpenRouter's keep-alive)
    DATA = "data"  # `data:` and a payload piece
    OTHER = "other"  # `event:`, `id:`, `retry:` (nothing OpenRouter uses)
    FOREIGN = "foreign"  # no SSE field at all (`<!DOCTYPE html>`)


def line_field(line: bytes) -> tuple[Field, bytes]:
    """What a non-blank line (without its line end) is, and its value: a comment's text, a data line's payload
    piece (one leading space dropped), nothing for the others."""
    if line[:1] == b":":
        return Field.COMMENT, line[1:]
    if line.startswith(b"data:"):
        return Field.DATA, line[6:] if line[5:6] == b" " else line[5:]
    if line.split(b":", 1)[0] in SSE_FIELDS:
        return Field.OTHER, b""
    return Field.FOREIGN, line


def split_events(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Whole events, each with its closing blank line and its bytes untouched, and the incomplete rest.

    A blank line after a bare CR at the very end of `buffer` ends the event there; the LF that may follow (the
    second half of a CRLF) then opens the next event as an empty line, which carries nothing."""
    events: list[bytes] = []
    start = 0
    if b"\r" not in buffer:  # the usual stream: LF only, no regex
        while (end := buffer.find(b"\n\n", start)) >= 0:
            events.append(buffer[start : end + 2])
            start = end + 2
        return events, buffer[start:]
    for match in _BLANK_LINE.finditer(buffer):
        events.append(buffer[start : match.end()])
        start = match.end()
    return events, buffer[start:]


def last_boundary(buffer: bytes) -> int:
    """Index just past the last blank line in `buffer` (0 if none): where whole events end."""
    if b"\r" not in buffer:
        lf = buffer.rfind(b"\n\n")
        return lf + 2 if lf >= 0 else 0
    end = 0
    for match in _BLANK_LINE.finditer(buffer):
        end = match.end()
    return end


def read_event(raw: bytes, *, first: bool = False, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Event | None:
    """What one whole event (`split_events`) carries: its data as a chunk, the end marker or a bad frame; a
    bad frame `NOT_SSE` for an event of lines that are no SSE at all; None for comments and other fields
    only. `first`: the stream's first event (a UTF-8 BOM before it is dropped). Payload over `max_bytes`:
    `LINE_TOO_LONG`."""
    if first:
        raw = raw.removeprefix(BOM)
    body = raw.rstrip(b"\r\n")
    if body.startswith(b"data:") and b"\n" not in body and b"\r" not in body:  # the usual: one data line
        value = body[6:] if body[5:6] == b" " else body[5:]
        return parse_data(value) if len(value) < max_bytes else _too_long(value)
    data: list[bytes] = []
    foreign: bytes | None = None
    for line in body.splitlines():  # bytes.splitlines ends lines at CRLF, LF and CR only: WHATWG's line ends
        if not line:
            continue
        kind, value = line_field(line)
        if kind is Field.DATA:
            data.append(value)
        elif kind is Field.FOREIGN and foreign is None:
            foreign = line
    if data:
        joined = b"\n".join(data)
        return parse_data(joined) if len(joined) < max_bytes else _too_long(joined)
    return _foreign(foreign) if foreign is not None else None


def parse_data(raw: bytes) -> Chunk | Done | BadFrame:
    """One event's data field → a chunk, the end marker, or a bad frame. Never raises."""
    if raw[:1] == b"{":  # the usual: one chunk, read with nothing else made
        try:
            value = _decode(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            pass
        else:
            if isinstance(value, dict):
                return Chunk(value)
    return _parse_data_slowly(raw)


def _parse_data_slowly(raw: bytes) -> Chunk | Done | BadFrame:
    try:
        text = raw.decode("utf-8")
        bad_utf8 = False
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        bad_utf8 = True
    if text.strip() == DONE_MARKER:
        return Done()
    excerpt, head, size = text[:BAD_FRAME_EXCERPT_CHARS], _head(raw), len(raw)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting recurses
        problem = FrameProblem.INVALID_UTF8 if bad_utf8 else FrameProblem.NOT_JSON
        return BadFrame(problem, excerpt, head=head, size=size)
    if not isinstance(value, dict):
        return BadFrame(FrameProblem.NOT_OBJECT, excerpt, head=head, size=size)
    if bad_utf8:
        return BadFrame(FrameProblem.INVALID_UTF8, excerpt, chunk=value, head=head, size=size)
    return Chunk(value)


def _excerpt(raw: bytes) -> str:
    return raw[: BAD_FRAME_EXCERPT_CHARS * 4].decode("utf-8", "replace")[:BAD_FRAME_EXCERPT_CHARS]


def _head(raw: bytes) -> bytes:
    return bytes(raw[:BAD_FRAME_HEAD_BYTES])


def _foreign(line: bytes) -> BadFrame:
    return BadFrame(FrameProblem.NOT_SSE, _excerpt(line), head=_head(line), size=len(line))


def _too_long(raw: bytes, size: int | None = None) -> BadFrame:
    return BadFrame(FrameProblem.LINE_TOO_LONG, _excerpt(raw), head=_head(raw), size=size or len(raw))


def escape_bytes(raw: bytes, limit: int = 80) -> str:
    """The first `limit` bytes as one printable line: valid UTF-8 kept, other bytes as ``\\xNN``, control
    characters escaped (``\\n``, ``\\x00``), ``…`` when cut. Fit for evidence; redact secrets after."""
    text = raw[:limit].decode("utf-8", "backslashreplace")
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out + ("…" if len(raw) > limit else "")
