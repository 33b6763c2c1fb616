"""Reading one parsed SSE chunk (a ``chat.completion.chunk`` mapping, docs/openrouter-api.md section 3).

Pure helpers over what tasks/core/wire/sse.py reads, the one definition of each for the probe and the router:
`delta_text`, `chunk_has_text` (the probe's TTFT), `chunk_has_output` (the router's commit point),
`is_first_text_chunk`, `first_text_chunk`, `chunk_error` (its numeric code: an integer or a digit string),
`chunk_finish`, `finish_reason`, `chunk_provider`, `chunk_usage`, and `one_line` for the error text they report.

**First content.** A chunk carries text when a delta has a non-empty `content`, `refusal`, `reasoning` or
`reasoning_content` string, or a non-empty `reasoning_details` (a model's reasoning, encrypted or summarised,
is its first token as much as reasoning text is). It carries output when it carries text or a tool call. The
probe's TTFT is the first chunk with text (docs/design.md "ttft": text, content or reasoning); the router
commits on the first chunk with output (a tool call is an answer the client is waiting for). The two agree on
every chunk but a tool-call delta.

An error object relayed by OpenRouter keeps its cause in `error.metadata`: `provider_name` (the display name
of the upstream that failed) and `raw` (the upstream's own body: a JSON string, a JSON object or plain text,
docs/openrouter-api.md 4b). `chunk_error` keeps both in its one-line message, bounded
(`RAW_EXCERPT_CHARS`), so "HTTP 429: Provider returned error" becomes
"HTTP 429: Provider returned error [Chutes]: ... is temporarily rate-limited upstream ...". Redaction is the
caller's (the probe redacts every error detail with the key before it is stored).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from tasks.core.round_records import Usage
from tasks.core.wire.sse import BadFrame, Chunk, SSEEvent

#: Delta keys whose non-empty string is text (the model's answer or its reasoning).
TEXT_KEYS = ("content", "refusal", "reasoning", "reasoning_content")


def _choices(chunk: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return []
    return [c for c in choices if isinstance(c, dict)]


def chunk_deltas(chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each choice's ``delta`` (a stream) or ``message`` (a non-streamed body). Chunks come from `json.loads`:
    objects are dicts (checked as such: an ABC check costs more than the rest of reading a delta)."""
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return []
    out = []
    for choice in choices:
        if isinstance(choice, dict):
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                delta = choice.get("message")
            if isinstance(delta, dict):
                out.append(delta)
    return out


def delta_text(chunk: Mapping[str, Any]) -> tuple[str, str]:
    """(content, reasoning) carried by a chunk's deltas (`deltas_text`)."""
    return deltas_text(chunk_deltas(chunk))


def deltas_text(deltas: list[dict[str, Any]]) -> tuple[str, str]:
    """(content, reasoning) carried by a chunk's deltas; "" for anything missing or not a string.

    Content is ``delta.content`` and a ``delta.refusal`` (OpenAI's refusal: the model's answer, in words).
    Reasoning is ``delta.reasoning`` (OpenRouter) or ``delta.reasoning_content`` (some upstreams).
    A non-streaming body's ``message`` is read the same way.
    """
    content: list[str] = []
    reasoning: list[str] = []
    for delta in deltas:
        for key in ("content", "refusal"):
            c = delta.get(key)
            if isinstance(c, str):
                content.append(c)
        r = delta.get("reasoning")
        if not isinstance(r, str):
            r = delta.get("reasoning_content")
        if isinstance(r, str):
            reasoning.append(r)
    return "".join(content), "".join(reasoning)


def chunk_has_text(chunk: Mapping[str, Any]) -> bool:
    """True when the chunk carries text (module docstring): role-only, empty and tool-call-only deltas do not."""
    for delta in chunk_deltas(chunk):
        for key in TEXT_KEYS:
            value = delta.get(key)
            if isinstance(value, str) and value:
                return True
        if delta.get("reasoning_details"):
            return True
    return False


def chunk_has_output(chunk: Mapping[str, Any]) -> bool:
    """True when the chunk carries text or a tool call: the router's commit point (module docstring)."""
    return chunk_has_text(chunk) or any(delta.get("tool_calls") for delta in chunk_deltas(chunk))


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


#: Characters of a relayed `metadata.raw` kept in an error's one-line message.
RAW_EXCERPT_CHARS = 160
#: Characters of a relayed `metadata.provider_name` kept.
PROVIDER_NAME_CHARS = 60


def chunk_error(chunk: Mapping[str, Any]) -> tuple[int | None, str] | None:
    """A top-level ``error`` (mid-stream error, or an error body): (code if numeric, one-line message).

    The message keeps the upstream's own words when OpenRouter relayed them (`upstream_words`)."""
    error = chunk.get("error")
    if error is None:
        return None
    if not isinstance(error, dict):
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
    words = upstream_words(error.get("metadata"))
    if words:
        text = f"{text} {words}" if text else words
    return code, one_line(text)


def upstream_words(metadata: object) -> str:
    """`[provider_name]: raw excerpt` from a relayed error's `metadata`; "" when it carries neither.

    `raw` may be a JSON string or object holding the upstream's error (its `message`/`detail` is taken, at
    any of the usual nestings) or plain text; either way it is cut to `RAW_EXCERPT_CHARS`."""
    if not isinstance(metadata, dict):
        return ""
    name = metadata.get("provider_name")
    head = f"[{one_line(name, PROVIDER_NAME_CHARS)}]" if isinstance(name, str) and name.strip() else ""
    raw = _raw_message(metadata.get("raw"))
    if not raw:
        return head
    excerpt = one_line(raw, RAW_EXCERPT_CHARS)
    return f"{head}: {excerpt}" if head else f"upstream: {excerpt}"


def _raw_message(raw: object) -> str:
    """The upstream's message inside a relayed `raw` (a JSON string, an object, or plain text)."""
    if isinstance(raw, str):
        text = raw.strip()
        if text[:1] in "{[":
            try:
                parsed = json.loads(text)
            except (ValueError, RecursionError):
                return text
            found = _message_in(parsed)
            return found if found else text
        return text
    if isinstance(raw, dict | list):
        found = _message_in(raw)
        if found:
            return found
        try:
            return json.dumps(raw, ensure_ascii=False)
        except (TypeError, ValueError):
            return ""
    return ""


def _message_in(value: object, depth: int = 0) -> str:
    """The first `message`/`detail`/`error` string in a relayed upstream body (nested `error` objects too)."""
    if depth > 4:
        return ""
    if isinstance(value, list):
        for item in value[:4]:
            found = _message_in(item, depth + 1)
            if found:
                return found
        return ""
    if not isinstance(value, dict):
        return ""
    for key in ("message", "detail", "error"):
        item = value.get(key)
        if isinstance(item, str) and item.strip():
            return item
    for key in ("error", "errors"):
        found = _message_in(value.get(key), depth + 1)
        if found:
            return found
    return ""


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


def finish_reason(chunk: Mapping[str, Any] | None) -> str | None:
    """The chunk's `finish_reason` (`chunk_finish`), or None."""
    return chunk_finish(chunk)[0] if chunk else None


def error_code(chunk: Mapping[str, Any] | None) -> int | None:
    """The numeric code of a chunk's top-level `error` (`chunk_error`: an integer or a digit string), or None."""
    error = chunk_error(chunk) if chunk else None
    return error[0] if error is not None else None


def chunk_usage(chunk: Mapping[str, Any] | None) -> Usage | None:
    """The chunk's `usage` (the billed counts, its cost), each count an integer or None; None without one."""
    usage = chunk.get("usage") if chunk else None
    if not isinstance(usage, dict):
        return None
    return Usage(prompt_tokens=_int(usage.get("prompt_tokens")), completion_tokens=_int(usage.get("completion_tokens")),
                 total_tokens=_int(usage.get("total_tokens")), cost=_float(usage.get("cost")))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def chunk_provider(chunk: Mapping[str, Any]) -> str | None:
    provider = chunk.get("provider")
    return provider if isinstance(provider, str) and provider else None


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace (newlines included) and cap the length: fit for a log line or a table cell."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
