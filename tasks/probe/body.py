"""What a probe's response body says, fed as it arrives (sans I/O: bytes and times in, the recorder updated).

    reader = BodyReader(status, reason, headers, rec, deadline, wall_now)  # once the headers are in
    for data in body:                                                    # the shell's loop (sync or async)
        if reader.feed(data, monotonic_now):
            break                                                        # read enough: stop reading
    reader.end(monotonic_now, budget_cut=...)                            # always, once reading stopped

Both probe shells (tasks/probe/attempt.py: `probe_once` on httpx.Client, `probe_once_async` on httpx.AsyncClient in the
probe worker's event loop) read bodies through this one class, so what a body means is decided once. The kinds,
by status and content-type (`body_kind`):

* ``error``  a non-200: its first `ERROR_BODY_CAP_BYTES` bytes give the error's detail (OpenRouter's error
             object, a redirect's Location, or the text); a read that fails leaves the detail at the status line.
* ``json``   a 200 that is JSON: an error body (openrouter-api.md 4c) or a whole non-streamed completion, capped.
* ``other``  a 200 that is neither (an HTML page): its first `SNIFF_CAP_BYTES` bytes are the evidence.
* ``sse``    an event stream (or no content-type: the parser decides): each block's events are applied with the
             time the block arrived, and the budget is checked after each; the end of the body flushes the parser.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from tasks.core.http_rules import is_redirect_status, parse_retry_after
from tasks.core.types import ErrorClass
from tasks.core.wire.chunks import chunk_error, one_line
from tasks.core.wire.sse import SSEParser, escape_bytes
from tasks.probe.recorder import AttemptRecorder

#: Bytes of a non-200 (or non-SSE 200) body read for its error message; the rest is never read.
ERROR_BODY_CAP_BYTES = 64 * 1024
#: Bytes read of a 200 body that is neither an event stream nor JSON: enough evidence, never the whole page.
SNIFF_CAP_BYTES = 4 * 1024


def body_kind(status: int, content_type: str) -> str:
    """`error` (not a 200), `sse` (an event stream, or no content-type: the parser decides), `json`, or `other`
    (text/html...)."""
    if status != 200:
        return "error"
    content_type = content_type.lower()
    if "event-stream" in content_type or not content_type.strip():
        return "sse"
    return "json" if "json" in content_type else "other"


class BodyReader:
    """One response body, fed block by block (module docstring); the recorder holds what it found."""

    def __init__(self, status: int, reason: str, headers: Any, rec: AttemptRecorder, deadline: float,
                 wall_now: datetime) -> None:
        self.rec, self.deadline = rec, deadline
        self.content_type = headers.get("content-type", "")
        self.kind = body_kind(status, self.content_type)
        self._status, self._reason, self._headers = status, reason, headers
        self._parts: list[bytes] = []
        self._size = 0
        self._stopped = False
        self._parser = SSEParser() if self.kind == "sse" else None
        if self.kind == "error":
            rec.retry_after_s = parse_retry_after(headers.get("retry-after"), wall_now)
        self._cap = {"error": ERROR_BODY_CAP_BYTES, "json": ERROR_BODY_CAP_BYTES + 4 * rec.cap_bytes + 1,
                     "other": SNIFF_CAP_BYTES + 1}.get(self.kind, 0)

    @property
    def keeps_status_on_read_error(self) -> bool:
        """An error body that cannot be read still leaves its status as the failure (the shell then calls
        `abandon`); a read error of any other body is the attempt's failure."""
        return self.kind == "error"

    def feed(self, data: bytes, now: float) -> bool:
        """One block of the body, arrived at `now` (monotonic s); True: enough read, stop reading."""
        if self._parser is None:
            self._parts.append(data)
            self._size += len(data)
            self._stopped = self._size >= self._cap
            return self._stopped
        rec = self.rec
        rec.bytes_read += len(data)
        for event in self._parser.feed(data):
            if rec.on_event(event, now):
                self._stopped = True
                return True
        if now >= self.deadline:
            rec.fail(ErrorClass.TIMEOUT, detail=f"probe budget of {self.deadline - rec.t0:g}s exceeded")
            self._stopped = True
        return self._stopped

    def abandon(self) -> None:
        """The body could not be read (an error body: its status stays the failure, without its text)."""
        self._parts, self._size = [], 0

    def end(self, now: float, *, budget_cut: bool = False) -> None:
        """Reading stopped (`feed` said so, or the body ended): record what the body says. `budget_cut`: the
        shell cut the read at the budget (an event stream that then looks ended is a timeout, not a cut)."""
        raw = b"".join(self._parts)
        if self.kind == "error":
            self._error(raw[:ERROR_BODY_CAP_BYTES])
        elif self.kind == "json":
            self._json(raw[: self._cap], now)
        elif self.kind == "other":
            self._foreign(raw[: self._cap], now)
        elif not self._stopped:
            self._stream_end(now, budget_cut)

    def _error(self, raw: bytes) -> None:
        status, rec = self._status, self.rec
        detail = f"HTTP {status} {self._reason}".strip()
        text = raw.decode("utf-8", "replace")
        try:
            payload: Any = json.loads(text)
        except ValueError:
            payload = None
        error = chunk_error(payload) if isinstance(payload, dict) else None
        if is_redirect_status(status):  # never followed (tasks/core/classify.py "Redirects"): its Location is evidence
            location = one_line(self._headers.get("location", ""), 200) or "none"
            detail = f"HTTP {status}: redirect to '{location}'"
        elif error is not None and error[1]:
            detail = f"HTTP {status}: {error[1]}"
        elif text.strip():
            detail = f"HTTP {status}: {one_line(text, 200)}"
        rec.fail(ErrorClass.HTTP_STATUS, code=status, detail=detail)

    def _json(self, raw: bytes, now: float) -> None:
        """A 200 that is not SSE: an error body (openrouter-api.md 4c) or a whole non-streamed completion."""
        rec, cap = self.rec, self._cap - 1
        rec.bytes_read = len(raw)
        ctype = one_line(self.content_type, 80)
        payload, problem = _json_object(raw[:cap])
        if len(raw) > cap:
            problem = f"over the {cap}-byte cap, stopped reading"
        if payload is None:
            seen = f"'{escape_bytes(raw)}' ({_bytes_read(raw, cap)})"
            rec.fail(ErrorClass.PROTOCOL, detail=f"HTTP 200 {ctype} body is not a JSON object ({problem}): {seen}")
            return
        rec.on_chunk(payload, now)
        rec.done = True

    def _foreign(self, raw: bytes, now: float) -> None:
        """A 200 that is neither an event stream nor JSON by its content-type (an HTML page, text/plain...).

        An OpenRouter error object sent with the wrong content-type is still read as one (its code decides);
        anything else is a protocol violation with its first bytes as evidence, and the rest is never read."""
        rec = self.rec
        rec.bytes_read = len(raw)
        payload, _ = _json_object(raw[:SNIFF_CAP_BYTES])
        if payload is not None and chunk_error(payload) is not None:
            rec.on_chunk(payload, now)
            rec.done = True
            return
        ctype = one_line(self.content_type, 80)
        seen = f"'{escape_bytes(raw)}' ({_bytes_read(raw, SNIFF_CAP_BYTES)})"
        rec.fail(ErrorClass.PROTOCOL, detail=f"HTTP 200 content-type ({ctype}) is not an event stream: {seen}")

    def _stream_end(self, now: float, budget_cut: bool) -> None:
        rec = self.rec
        if budget_cut or now >= self.deadline:  # a cut at the deadline can look like a clean end of body
            rec.fail(ErrorClass.TIMEOUT, detail=f"probe budget of {self.deadline - rec.t0:g}s exceeded")
            return
        assert self._parser is not None
        for event in self._parser.close():
            if rec.on_event(event, now):
                return
        if not rec.done and rec.finish_reason is None:
            rec.fail(ErrorClass.STREAM_CUT, detail="stream ended before a finish_reason or [DONE]")


def _json_object(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """(the JSON object, "") or (None, what is wrong with the bytes)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"invalid UTF-8 at byte {exc.start}"
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):
        return None, "not JSON"
    if not isinstance(payload, dict):
        return None, f"JSON {type(payload).__name__}, not an object"
    return payload, ""


def _bytes_read(raw: bytes, cap: int) -> str:
    return f"{cap} bytes read, the rest not read" if len(raw) > cap else f"{len(raw)} bytes"
