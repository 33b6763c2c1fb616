"""Folding what a probe's wire shows into an `Attempt` (pure: no I/O, no clock; times are passed in).

`AttemptRecorder` is fed SSE events (tasks.core.wire.sse) or whole chunks with the monotonic time they arrived, and
`to_attempt` freezes the result. Rules that live here:

* TTFT is the arrival time of the first chunk that carries text (tasks/core/wire/chunks.py `chunk_has_text`:
  non-empty content, refusal or reasoning, the router's commit rule but for tool calls), from
  `ttft_from` (the request's start `t0`, or when the request was written to the socket, if the shell knows it).
* Text and reasoning are capped at `cap_bytes` of UTF-8, cut on a character boundary (`text_truncated`).
* The first wire fault wins (`fail`), except that a bad frame yields to anything worse that follows.
* A frame that cannot be decoded (not JSON, not an object, invalid UTF-8, a line over the parser's cap, or
  no SSE at all before the first chunk) is a `protocol_violation`: recorded with one-line evidence (what was
  seen, its first bytes escaped, byte counts) and the stream is over (`on_event` returns True: stop
  reading). A line cut by the end of the stream is a `stream_cut`. A stray non-SSE line after data began is
  ignored, as the SSE spec ignores unknown fields.
* What the chunks add up to (text, reasoning, tool calls by ``index``, finish reasons, usage, the provider) is
  folded by tasks/core/wire/fold.py, the fold the router's judge uses too (a cut sets ``text_truncated``).
  Tool-call deltas carry no text, so they never set TTFT.
* Error details, reply text, reasoning and the served provider pass through `tasks.runtime.secrets.redact_known_secrets`
  (the API key made known when the recorder is made) before anything judges or cuts them: evidence excerpts are
  cut from redacted text, never a secret.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tasks.core.types import Attempt, Endpoint, ErrorClass
from tasks.core.wire.chunks import chunk_has_text, one_line
from tasks.core.wire.fold import ChunkFold
from tasks.core.wire.sse import (
    DEFAULT_MAX_LINE_BYTES,
    BadFrame,
    Chunk,
    Comment,
    Done,
    FrameProblem,
    SSEEvent,
    escape_bytes,
)
from tasks.runtime.secrets import redact_known_secrets, redact_known_secrets_opt, register


class AttemptRecorder(ChunkFold):
    """Folds what the wire shows into the fields of an `Attempt` (the mutable half of the shell): the fold the
    router's judge uses too (tasks/core/wire/fold.py) plus the probe's rules about faults and time."""

    def __init__(self, *, cap_bytes: int, t0: float, secret: str = "") -> None:
        super().__init__(cap_bytes)
        self.cap_bytes, self.t0 = cap_bytes, t0
        register(secret)  # the key this attempt sends is masked in whatever it records (and everywhere after)
        self.ttft_from = t0  # TTFT's origin: the request's start, or when it was sent (tasks/probe/sockets.py)
        self.http_status: int | None = None
        self.ttft_ms: float | None = None
        self.keepalive_count = 0
        self.done = False
        self.error_class: ErrorClass | None = None
        self.error_code: int | None = None
        self.error_detail: str | None = None
        self.retry_after_s: float | None = None
        self.bytes_read = 0  # body bytes received so far (the probe adds them as they arrive)

    def elapsed_ms(self, now: float) -> float:
        return (now - self.t0) * 1000.0

    def fail(self, cls: ErrorClass, *, code: int | None = None, detail: str | None = None) -> None:
        """Record a wire fault. The first fault wins, except that a bad frame yields to anything worse."""
        if self.error_class is not None and not (
            self.error_class is ErrorClass.BAD_FRAME and cls is not ErrorClass.BAD_FRAME
        ):
            return
        self.error_class, self.error_code = cls, code
        self.error_detail = one_line(redact_known_secrets(detail)) if detail else None

    def on_event(self, event: SSEEvent, now: float) -> bool:
        """Apply one SSE event; True when the stream is over ([DONE], or a protocol violation)."""
        if isinstance(event, Comment):
            self.keepalive_count += 1
        elif isinstance(event, Chunk):
            self.on_chunk(event.data, now)
        elif isinstance(event, Done):
            self.done = True
            return True
        elif isinstance(event, BadFrame):
            return self._on_bad_frame(event, now)
        return False

    def _on_bad_frame(self, event: BadFrame, now: float) -> bool:
        seen = f"'{escape_bytes(event.head)}' ({event.size} bytes)"
        if event.problem == FrameProblem.INCOMPLETE:
            self.fail(ErrorClass.STREAM_CUT, detail=f"stream ended inside a line: {seen}")
            return False
        if event.problem == FrameProblem.NOT_SSE and (self.chunk_count or self.done):
            return False
        if event.chunk is not None:
            self.on_chunk(event.chunk, now)
        where = f"after chunks ({self.chunk_count}), bytes_read ({self.bytes_read})"
        what = {
            FrameProblem.NOT_JSON: f"data: frame is not JSON: {seen}",
            FrameProblem.NOT_OBJECT: f"data: frame is JSON but not an object: {seen}",
            FrameProblem.INVALID_UTF8: f"frame is not valid UTF-8: {seen}",
            FrameProblem.NOT_SSE: f"HTTP 200 body is not an event stream, first line {seen}",
            FrameProblem.LINE_TOO_LONG: (
                f"line over the {DEFAULT_MAX_LINE_BYTES}-byte cap: stopped reading; "
                f"'{escape_bytes(event.head)}' ({event.size}+ bytes in the line)"
            ),
        }.get(event.problem, f"bad frame ({event.problem}): {seen}")
        self.fail(ErrorClass.PROTOCOL, detail=f"{what}; {where}")
        return True

    def on_chunk(self, chunk: dict[str, Any], now: float) -> None:
        """Apply one chunk (or a whole non-streamed completion / error body) that arrived at `now`."""
        if self.ttft_ms is None and chunk_has_text(chunk):
            self.ttft_ms = (now - self.ttft_from) * 1000.0
        error = self.add(chunk)
        if error is not None:
            self.fail(ErrorClass.MIDSTREAM_ERROR, code=error[0], detail=error[1] or "error chunk")

    def to_attempt(
        self, *, round_id: str, endpoint: Endpoint, contract: str, attempt_no: int, started_at: datetime,
        language: str, end: float,
    ) -> Attempt:
        return Attempt(
            round_id=round_id, model=endpoint.model, tag=endpoint.tag, provider_name=endpoint.provider_name,
            contract=contract, attempt_no=attempt_no, started_at=started_at, language=language,
            http_status=self.http_status, ttft_ms=self.ttft_ms, total_ms=self.elapsed_ms(end),
            chunk_count=self.chunk_count, keepalive_count=self.keepalive_count,
            finish_reason=redact_known_secrets_opt(self.finish_reason),
            native_finish_reason=redact_known_secrets_opt(self.native_finish_reason),
            served_provider=redact_known_secrets_opt(self.provider), usage=self.usage,
            text=redact_known_secrets(self.text.value()),
            text_truncated=self.text.truncated or self.reasoning.truncated or self.tool_calls.truncated,
            reasoning=redact_known_secrets(self.reasoning.value()), error_class=self.error_class,
            error_code=self.error_code,
            error_detail=self.error_detail, retry_after_s=self.retry_after_s, tool_calls=self.calls(),
        )

