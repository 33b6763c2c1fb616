"""Tool calls on the wire, sans I/O: the fragments one chunk carries (docs/openrouter-api.md 3c).

The companion of tasks/core/sse.py for ``delta.tool_calls``; tasks/probe_record.py assembles the fragments by index
into `tasks.core.types.ToolCall` records.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCallFragment:
    """One entry of a chunk's ``delta.tool_calls`` (or of a non-streamed ``message.tool_calls``)."""

    index: int
    id: str | None
    name: str | None
    arguments: str


def delta_tool_calls(chunk: Mapping[str, Any]) -> list[ToolCallFragment]:
    """The tool-call fragments a chunk carries (docs/openrouter-api.md 3c), in wire order.

    A stream sends ``{"index", "id", "type", "function": {"name", "arguments": ""}}`` first, then
    ``{"index", "function": {"arguments": "<piece>"}}``; a non-streamed body has whole calls in
    ``message.tool_calls``. A missing or non-integer ``index`` falls back to the entry's position. Arguments
    that are not a string (an object some upstreams send) are kept as compact JSON; anything else is "".
    """
    out: list[ToolCallFragment] = []
    for choice in _choices(chunk):
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            delta = choice.get("message")
        calls = delta.get("tool_calls") if isinstance(delta, Mapping) else None
        if not isinstance(calls, list):
            continue
        for pos, call in enumerate(calls):
            if not isinstance(call, Mapping):
                continue
            raw_index = call.get("index")
            index = raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else pos
            fn = call.get("function")
            fn = fn if isinstance(fn, Mapping) else {}
            name, args, call_id = fn.get("name"), fn.get("arguments"), call.get("id")
            if isinstance(args, str):
                text = args
            elif isinstance(args, Mapping | list):
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


def _choices(chunk: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return []
    return [c for c in choices if isinstance(c, Mapping)]
