"""What one complete SSE event of an upstream stream is, read from its bytes (pure; provider_canary/router/stream.py's
gate uses it).

The wire is read by tasks/core/wire/ (the probe reads it there too): `split_events` cuts a buffer into complete
events (bytes untouched), `read_event` says what one carries. `classify` says what that is to the gate (a
keep-alive, an empty chunk, the first content, [DONE], an error, a bad frame). The fast-path helpers let the
gate forward plain text deltas after the commit without parsing them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from tasks.core.classify import names_upstream_failure
from tasks.core.wire.chunks import chunk_has_output, chunk_usage, error_code, finish_reason
from tasks.core.wire.sse import DEFAULT_MAX_LINE_BYTES, BadFrame, Done, Event, read_event

__all__ = ["Kind", "classify", "error_code", "error_summary", "finish_reason", "kind_of", "may_change_state",
           "native_error", "plain_text_only", "usage_tokens"]

_FINISH = re.compile(rb'"finish_reason"\s*:\s*"')


class Kind(StrEnum):
    """What one complete SSE event is."""

    KEEPALIVE = "keepalive"  # comments only, or no data line
    EMPTY = "empty"  # a chunk with nothing to show: role-only, empty content, usage-only
    CONTENT = "content"  # the commit point: text or a tool call (tasks/core/wire/chunks.py `chunk_has_output`)
    FINISH = "finish"  # a finish_reason (not "error") and no output in it: the commit point, or an empty answer
    DONE = "done"  # data: [DONE]
    ERROR = "error"  # a top-level "error" object (or finish_reason "error")
    BAD = "bad"  # a data line that is not a JSON object

def _finishes(choice: Any) -> bool:
    return isinstance(choice, dict) and choice.get("finish_reason") not in (None, "error")

def classify(raw: bytes, *, first: bool = False, max_bytes: int = DEFAULT_MAX_LINE_BYTES
             ) -> tuple[Kind, dict[str, Any] | None]:
    """Kind of one complete event, and its parsed chunk when it has one. `first`: the stream's first event (a
    UTF-8 BOM before it is dropped); a payload over `max_bytes` is a bad frame."""
    return kind_of(read_event(raw, first=first, max_bytes=max_bytes))


def kind_of(event: Event | None) -> tuple[Kind, dict[str, Any] | None]:
    """Kind of what one event carries (tasks/core/wire/sse.py `read_event`), and its chunk when it has one."""
    if event is None:
        return Kind.KEEPALIVE, None  # comments and other fields only
    if isinstance(event, Done):
        return Kind.DONE, None
    if isinstance(event, BadFrame):
        return Kind.BAD, None  # not JSON, not an object, not UTF-8, no SSE at all (an HTML page under HTTP 200)
    chunk = event.data
    choices = chunk.get("choices")
    choices = choices if isinstance(choices, list) else []
    if chunk.get("error") is not None or any(
        isinstance(c, dict) and c.get("finish_reason") == "error" for c in choices
    ):
        return Kind.ERROR, chunk
    if chunk_has_output(chunk):
        return Kind.CONTENT, chunk
    if any(_finishes(c) for c in choices):
        return Kind.FINISH, chunk
    return Kind.EMPTY, chunk

def native_error(chunk: dict[str, Any] | None) -> str | None:
    """The `native_finish_reason` of a chunk when it names an upstream error: OpenRouter reports a failed
    upstream hop as `finish_reason: "stop"` with `native_finish_reason: "network_error"`. The rule is the
    probe's (tasks/core/classify.py)."""
    for choice in (chunk or {}).get("choices") or []:
        native = choice.get("native_finish_reason") if isinstance(choice, dict) else None
        if isinstance(native, str) and names_upstream_failure(native):
            return native[:40]
    return None


def error_summary(chunk: dict[str, Any] | None) -> str:
    error = chunk.get("error") if chunk else None
    if isinstance(error, dict):
        return f"{error.get('code')}: {str(error.get('message', ''))[:120]}"
    return "finish_reason error"

def usage_tokens(doc: Mapping[str, Any] | None) -> tuple[int | None, int | None]:
    """`usage.prompt_tokens` and `usage.completion_tokens` of a chunk or a whole answer (the billed counts)."""
    usage = chunk_usage(doc)
    return (usage.prompt_tokens, usage.completion_tokens) if usage is not None else (None, None)


def plain_text_only(events: bytes) -> bool:
    """True when no event in `events` can change the state (no [DONE], error, usage or finish_reason)."""
    return not (b"[DONE]" in events or b'"error"' in events or b'"usage"' in events or _FINISH.search(events))


def may_change_state(raw: bytes) -> bool:
    """Whether a committed event can be [DONE], an error, usage or a finish_reason (else: a plain delta)."""
    return bool(b'"error"' in raw or b'"usage"' in raw or _FINISH.search(raw))
