"""Tool calling in the simulator (pure): which turn needs a call, and the call an endpoint makes.

A request "has tools" when its `tools` list offers at least one function. Whether the turn needs a call:
`tool_choice` "none" → no; a forced `{"type": "function", "function": {"name": X}}` → X; "required" → the
best match, else the first tool; "auto" (or absent) → the offered tool whose name words (split on `_`, `-`,
`.`; four letters or more, e.g. `roll`, `dice`) occur most often as words in the last user message, and no
call when none occurs. Healthy arguments are an instance of the tool's parameters schema
(provider_canary/simulator/structured.py), deterministic per request. The faults (provider_canary/simulator/faults.py)
bend that.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from provider_canary.simulator import structured, text

_WORD = re.compile(r"[a-z]{4,}")
#: Faults whose reply replaces the call with prose (when a fleet applies them to tool requests too).
PROSE_FAULTS = frozenset({"no_call", "refusal", "content_filter", "empty_reply", "truncated"})


@dataclass(frozen=True)
class PlannedCall:
    """One tool call as the endpoint sends it: whole (non-streaming) or as `pieces` of its arguments."""

    id: str
    name: str
    arguments: str
    pieces: tuple[str, ...]


def offered_tools(body: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Function name -> parameters schema, in request order ({} when the request offers no tool)."""
    tools = body.get("tools")
    out: dict[str, Mapping[str, Any]] = {}
    if not isinstance(tools, list):
        return out
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if isinstance(name, str) and name:
            params = fn.get("parameters") if isinstance(fn, Mapping) else None
            out[name] = params if isinstance(params, Mapping) else {"type": "object"}
    return out


def wanted_tool(body: Mapping[str, Any], user_text: str) -> str | None:
    """The tool this turn needs, or None (module docstring)."""
    tools = offered_tools(body)
    if not tools:
        return None
    choice = body.get("tool_choice", "auto")
    if choice == "none":
        return None
    if isinstance(choice, Mapping):
        fn = choice.get("function")
        forced = fn.get("name") if isinstance(fn, Mapping) else None
        if isinstance(forced, str) and forced in tools:
            return forced
    words = _WORD.findall(user_text.lower())
    scores = {name: sum(words.count(w) for w in _WORD.findall(name.lower())) for name in tools}
    best = max(tools, key=lambda n: scores[n])
    if scores[best] > 0:
        return best
    return next(iter(tools)) if choice == "required" else None


def call_id(seed: int, index: int) -> str:
    """`call_` + 24 alphanumerics, as OpenAI-compatible upstreams name calls (deterministic per request)."""
    rng = random.Random(seed * 31 + index)
    return "call_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(24))


def plan_calls(
    body: Mapping[str, Any], user_text: str, kind: str, params: Mapping[str, Any], lang: str, seed: int
) -> tuple[PlannedCall, ...]:
    """The calls this endpoint makes for the request under fault `kind` (() = it answers in prose)."""
    tools = offered_tools(body)
    wanted = wanted_tool(body, user_text)
    if wanted is None and kind == "call_when_none_needed" and tools:
        wanted = next(iter(tools))
    elif kind in PROSE_FAULTS:
        wanted = None
    if wanted is None:
        return ()
    schema = tools[wanted]
    value = structured.instance(schema, lang, seed)
    name = wanted
    if kind == "schema_violating_args":
        value = violate(value, schema, str(params.get("mode", "missing_required")))
    arguments = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if kind == "bad_json_args":
        arguments = structured.make_invalid(arguments, str(params.get("mode", "truncated")))
    elif kind == "unknown_tool":
        name = str(params.get("name") or f"functions.{wanted}")
    return (PlannedCall(call_id(seed, 0), name, arguments, tuple(text.split_json(arguments, seed))),)


def violate(value: Any, schema: Mapping[str, Any], mode: str) -> Any:
    """structured.violate, plus `nested`: the first nested object's first required key gets a wrong type
    (the error path is then `$.<object>.<key>`)."""
    if mode == "nested" and isinstance(value, dict):
        props = schema.get("properties")
        for key, sub in (props if isinstance(props, Mapping) else {}).items():
            inner = value.get(key)
            required = sub.get("required") if isinstance(sub, Mapping) else None
            if isinstance(inner, dict) and isinstance(required, list) and required:
                broken = dict(value)
                broken[key] = {**inner, required[0]: [inner.get(required[0])]}
                return broken
        mode = "wrong_type"
    return structured.violate(value, schema, mode)
