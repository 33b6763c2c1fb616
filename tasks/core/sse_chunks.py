"""Reading one parsed SSE chunk (a ``chat.completion.chunk`` mapping, docs/openrouter-api.md section 3).

Pure helpers over what tasks/core/sse.py's `SSEParser` returns: `delta_text`, `chunk_has_text`,
`is_first_text_chunk`, `first_text_chunk`, `chunk_error`, `chunk_finish`, `chunk_provider`, and `one_line`
for the error text they report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.core.sse import BadFrame, Chunk, SSEEvent


def _choices(chunk: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return []
    return [c for c in choices if isinstance(c, Mapping)]


def delta_text(chunk: Mapping[str, Any]) -> tuple[str, str]:
    """(content, reasoning) carried by a chunk's deltas; "" for anything missing or not a string.

    Reasoning is ``delta.reasoning`` (OpenRouter) or ``delta.reasoning_content`` (some upstreams).
    A non-streaming body's ``message`` is read the same way.
    """
    content: list[str] = []
    reasoning: list[str] = []
    for choice in _choices(chunk):
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            delta = choice.get("message")
        if not isinstance(delta, Mapping):
            continue
        c = delta.get("content")
        if isinstance(c, str):
            content.append(c)
        r = delta.get("reasoning")
        if not isinstance(r, str):
            r = delta.get("reasoning_content")
        if isinstance(r, str):
            reasoning.append(r)
    return "".join(content), "".join(reasoning)


def chunk_has_text(chunk: Mapping[str, Any]) -> bool:
    """True when the chunk carries non-empty content or reasoning (role-only and empty deltas do not)."""
    content, reasoning = delta_text(chunk)
    return bool(content or reasoning)


def is_first_text_chunk(event: SSEEvent) -> bool:
    """Whether this event can be the stream's first token (docs/design.md "ttft").

    Only a chunk with non-empty content or reasoning counts: comments (keep-alives), role-only or empty
    deltas, the end marker and unparseable frames do not. A frame with invalid UTF-8 that still parsed counts
    (the model did produce text; its corruption is the language contract's business).
    """
    if isinstance(event, Chunk):
        return chunk_has_text(event.data)
    if isinstance(event, BadFrame) and event.chunk is not None:
        return chunk_has_text(event.chunk)
    return False


def first_text_chunk(events: Iterable[SSEEvent]) -> SSEEvent | None:
    """The first event for which `is_first_text_chunk` holds, or None."""
    return next((e for e in events if is_first_text_chunk(e)), None)


def chunk_error(chunk: Mapping[str, Any]) -> tuple[int | None, str] | None:
    """A top-level ``error`` (mid-stream error, or an error body): (code if numeric, one-line message)."""
    error = chunk.get("error")
    if error is None:
        return None
    if not isinstance(error, Mapping):
        return None, one_line(str(error))
    raw_code = error.get("code")
    code: int | None = None
    if isinstance(raw_code, int) and not isinstance(raw_code, bool):
        code = raw_code
    elif isinstance(raw_code, str) and raw_code.isdigit():
        code = int(raw_code)
    message = error.get("message")
    text = one_line(message) if isinstance(message, str) else ""
    if code is None and isinstance(raw_code, str) and raw_code:
        text = f"{one_line(raw_code)}: {text}" if text else one_line(raw_code)
    return code, text


def chunk_finish(chunk: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(finish_reason, native_finish_reason) of the chunk's first choice that has either."""
    for choice in _choices(chunk):
        finish = choice.get("finish_reason")
        native = choice.get("native_finish_reason")
        f = finish if isinstance(finish, str) and finish else None
        n = native if isinstance(native, str) and native else None
        if f or n:
            return f, n
    return None, None


def chunk_provider(chunk: Mapping[str, Any]) -> str | None:
    provider = chunk.get("provider")
    return provider if isinstance(provider, str) and provider else None


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace (newlines included) and cap the length: fit for a log line or a table cell."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
