"""Folding what a probe's wire shows into an `Attempt` (pure: no I/O, no clock; times are passed in).

`AttemptRecorder` is fed SSE events (tasks.sse) or whole chunks with the monotonic time they arrived, and
`to_attempt` freezes the result. Rules that live here:

* TTFT is the arrival time of the first chunk whose delta carries non-empty content or reasoning.
* Text and reasoning are capped at `cap_bytes` of UTF-8, cut on a character boundary (`text_truncated`).
* The first wire fault wins (`fail`), except that a bad frame yields to anything worse that follows.
* Error details, reply text, reasoning and the served provider pass through `tasks.secrets.redact` (with the
  API key) before anything judges or cuts them: evidence excerpts are cut from redacted text, never a secret.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from tasks.secrets import redact, redact_opt
from tasks.sse import (
    BadFrame,
    Chunk,
    Comment,
    Done,
    SSEEvent,
    chunk_error,
    chunk_finish,
    chunk_provider,
    delta_text,
    one_line,
)
from tasks.types import Attempt, Contract, Endpoint, ErrorClass, Usage


class AttemptRecorder:
    """Folds what the wire shows into the fields of an `Attempt` (the mutable half of the shell)."""

    def __init__(self, *, cap_bytes: int, t0: float, secret: str = "") -> None:
        self.cap_bytes, self.t0, self._secret = cap_bytes, t0, secret
        self.http_status: int | None = None
        self.ttft_ms: float | None = None
        self.chunk_count = 0
        self.keepalive_count = 0
        self.finish_reason: str | None = None
        self.native_finish_reason: str | None = None
        self.provider: str | None = None
        self.usage = Usage()
        self.done = False
        self.error_class: ErrorClass | None = None
        self.error_code: int | None = None
        self.error_detail: str | None = None
        self.retry_after_s: float | None = None
        self._text = _CappedText(cap_bytes)
        self._reasoning = _CappedText(cap_bytes)

    def elapsed_ms(self, now: float) -> float:
        return (now - self.t0) * 1000.0

    def fail(self, cls: ErrorClass, *, code: int | None = None, detail: str | None = None) -> None:
        """Record a wire fault. The first fault wins, except that a bad frame yields to anything worse."""
        if self.error_class is not None and not (
            self.error_class is ErrorClass.BAD_FRAME and cls is not ErrorClass.BAD_FRAME
        ):
            return
        self.error_class, self.error_code = cls, code
        self.error_detail = one_line(redact(detail, self._secret)) if detail else None

    def on_event(self, event: SSEEvent, now: float) -> bool:
        """Apply one SSE event; True when the stream is over ([DONE])."""
        if isinstance(event, Comment):
            self.keepalive_count += 1
        elif isinstance(event, Chunk):
            self.on_chunk(event.data, now)
        elif isinstance(event, Done):
            self.done = True
            return True
        elif isinstance(event, BadFrame):
            self.fail(ErrorClass.BAD_FRAME, detail=f"bad frame ({event.problem}): {event.raw[:120]}")
            if event.chunk is not None:
                self.on_chunk(event.chunk, now)
        return False

    def on_chunk(self, chunk: dict[str, Any], now: float) -> None:
        """Apply one chunk (or a whole non-streamed completion / error body) that arrived at `now`."""
        self.chunk_count += 1
        self.provider = self.provider or chunk_provider(chunk)
        error = chunk_error(chunk)
        if error is not None:
            self.fail(ErrorClass.MIDSTREAM_ERROR, code=error[0], detail=error[1] or "error chunk")
        content, reasoning = delta_text(chunk)
        if (content or reasoning) and self.ttft_ms is None:
            self.ttft_ms = self.elapsed_ms(now)
        self._text.add(content)
        self._reasoning.add(reasoning)
        finish, native = chunk_finish(chunk)
        self.finish_reason = finish or self.finish_reason
        self.native_finish_reason = native or self.native_finish_reason
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage(
                prompt_tokens=_int(usage.get("prompt_tokens")),
                completion_tokens=_int(usage.get("completion_tokens")),
                total_tokens=_int(usage.get("total_tokens")),
                cost=_float(usage.get("cost")),
            )

    def to_attempt(
        self, *, round_id: str, endpoint: Endpoint, contract: Contract, attempt_no: int, started_at: datetime,
        language: str, end: float,
    ) -> Attempt:
        return Attempt(
            round_id=round_id, model=endpoint.model, tag=endpoint.tag, provider_name=endpoint.provider_name,
            contract=contract, attempt_no=attempt_no, started_at=started_at, language=language,
            http_status=self.http_status, ttft_ms=self.ttft_ms, total_ms=self.elapsed_ms(end),
            chunk_count=self.chunk_count, keepalive_count=self.keepalive_count,
            finish_reason=self.finish_reason, native_finish_reason=self.native_finish_reason,
            served_provider=redact_opt(self.provider), usage=self.usage, text=redact(self._text.value()),
            text_truncated=self._text.truncated or self._reasoning.truncated,
            reasoning=redact(self._reasoning.value()), error_class=self.error_class,
            error_code=self.error_code, error_detail=self.error_detail, retry_after_s=self.retry_after_s,
        )


class _CappedText:
    """Concatenated deltas, cut at `cap` bytes of UTF-8 on a character boundary; lone surrogates → U+FFFD."""

    def __init__(self, cap: int) -> None:
        self.cap, self.size, self.truncated = cap, 0, False
        self._parts: list[str] = []

    def add(self, piece: str) -> None:
        if not piece or self.truncated:
            return
        try:
            raw = piece.encode("utf-8")
        except UnicodeEncodeError:
            piece = piece.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            raw = piece.encode("utf-8")
        room = self.cap - self.size
        if len(raw) > room:
            piece = raw[:room].decode("utf-8", "ignore")
            self.truncated = True
        self._parts.append(piece)
        self.size += len(piece.encode("utf-8"))

    def value(self) -> str:
        return "".join(self._parts)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
