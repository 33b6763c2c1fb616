"""Tool calls on the wire, sans I/O: the fragments one chunk carries (docs/openrouter-api.md 3c).

The companion of tasks/core/wire/sse.py for ``delta.tool_calls``. `ToolCallAssembler` folds the fragments by index into
`tasks.core.types.ToolCall` records (the probe's tasks/probe/recorder.py and the router's
provider_canary/router/answer.py both use it): the first non-empty ``id`` and ``name`` of an index win, its
``arguments`` fragments are concatenated in arrival order, capped like the text (`CappedText`; a cut sets
``truncated``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tasks.core.round_records import ToolCall
from tasks.core.wire.chunks import chunk_deltas


@dataclass(frozen=True, slots=True)
class ToolCallFragment:
    """One entry of a chunk's ``delta.tool_calls`` (or of a non-streamed ``message.tool_calls``)."""

    index: int
    id: str | None
    name: str | None
    arguments: str


def delta_tool_calls(chunk: Mapping[str, Any]) -> list[ToolCallFragment]:
    """The tool-call fragments a chunk carries (`deltas_tool_calls` of its deltas)."""
    return deltas_tool_calls(chunk_deltas(chunk))


def deltas_tool_calls(deltas: list[dict[str, Any]]) -> list[ToolCallFragment]:
    """The tool-call fragments a chunk's deltas carry (docs/openrouter-api.md 3c), in wire order.

    A stream sends ``{"index", "id", "type", "function": {"name", "arguments": ""}}`` first, then
    ``{"index", "function": {"arguments": "<piece>"}}``; a non-streamed body has whole calls in
    ``message.tool_calls``. A missing or non-integer ``index`` falls back to the entry's position. Arguments
    that are not a string (an object some upstreams send) are kept as compact JSON; anything else is "".
    """
    out: list[ToolCallFragment] = []
    for delta in deltas:
        calls = delta.get("tool_calls")
        if not isinstance(calls, list):
            continue
        for pos, call in enumerate(calls):
            if not isinstance(call, dict):
                continue
            raw_index = call.get("index")
            index = raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else pos
            fn = call.get("function")
            fn = fn if isinstance(fn, dict) else {}
            name, args, call_id = fn.get("name"), fn.get("arguments"), call.get("id")
            if isinstance(args, str):
                text = args
            elif isinstance(args, dict | list):
                text = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
            else:
                text = ""
            out.append(
                ToolCallFragment(
                    index=index,
                    id=call_id if isinstance(call_id, str) and call_id else None,
                    name=name if isinstance(name, str) and name else None,
                    arguments=text,
                )
            )
    return out


class CappedText:
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
            raw = piece.encode("utf-8")
            self.truncated = True
        self._parts.append(piece)
        self.size += len(raw)

    def value(self) -> str:
        return "".join(self._parts)


class ToolCallAssembler:
    """Tool-call fragments folded by index; arguments share one byte cap (`truncated` when it cut)."""

    def __init__(self, cap: int) -> None:
        self._ids: dict[int, str | None] = {}
        self._names: dict[int, str] = {}
        self._args: dict[int, CappedText] = {}
        self._cap = cap

    @property
    def truncated(self) -> bool:
        return any(a.truncated for a in self._args.values())

    def add(self, index: int, call_id: str | None, name: str | None, arguments: str) -> None:
        if index not in self._args:
            self._args[index] = CappedText(self._cap)
        if call_id and not self._ids.get(index):
            self._ids[index] = call_id
        if name and not self._names.get(index):
            self._names[index] = name
        self._args[index].add(arguments)

    def value(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(i, self._ids.get(i), self._names.get(i, ""), self._args[i].value())
            for i in sorted(self._args)
        )
