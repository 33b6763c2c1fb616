"""From the wire to a record: what a stream's chunks (or a whole non-streamed body) add up to (pure, no clock).

One fold for the probe (tasks/probe/recorder.py `AttemptRecorder`) and the router's judge
(provider_canary/router/answer.py `AnswerReader`): each keeps its own rules about faults and time around it.
`ChunkFold.add(chunk)` reads a chunk once (tasks/core/wire/chunks.py, tools.py) and folds:

* the chunk count, and the first `provider` named;
* content and reasoning text, each capped at `cap_bytes` of UTF-8 and cut on a character boundary;
* tool calls by index (the first non-empty `id` and `name` win, `arguments` concatenated in arrival order, capped);
* the last `finish_reason` / `native_finish_reason` and the last `usage` seen.

It returns the chunk's error, `(code, one-line message)`, when it carries one: what makes it a fault is the
caller's rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.core.round_records import ToolCall, Usage
from tasks.core.wire.chunks import chunk_deltas, chunk_error, chunk_finish, chunk_provider, chunk_usage, deltas_text
from tasks.core.wire.tools import CappedText, ToolCallAssembler, deltas_tool_calls


class ChunkFold:
    """The running fold of one answer's chunks (mutable; one per answer, not thread-safe)."""

    def __init__(self, cap_bytes: int) -> None:
        self.chunk_count = 0
        self.provider: str | None = None
        self.finish_reason: str | None = None
        self.native_finish_reason: str | None = None
        self.usage = Usage()  # the last `usage` seen (all None before one)
        self.text = CappedText(cap_bytes)
        self.reasoning = CappedText(cap_bytes)
        self.tool_calls = ToolCallAssembler(cap_bytes)

    def add(self, chunk: Mapping[str, Any]) -> tuple[int | None, str] | None:
        """Fold one chunk (or a whole body); its error, if it carries one (module docstring)."""
        self.chunk_count += 1
        if self.provider is None:
            self.provider = chunk_provider(chunk)
        deltas = chunk_deltas(chunk)
        content, reasoning = deltas_text(deltas)
        self.text.add(content)
        self.reasoning.add(reasoning)
        for fragment in deltas_tool_calls(deltas):
            self.tool_calls.add(fragment.index, fragment.id, fragment.name, fragment.arguments)
        finish, native = chunk_finish(chunk)
        self.finish_reason = finish or self.finish_reason
        self.native_finish_reason = native or self.native_finish_reason
        self.usage = chunk_usage(chunk) or self.usage
        return chunk_error(chunk) if "error" in chunk else None

    def calls(self) -> tuple[ToolCall, ...]:
        return self.tool_calls.value()
