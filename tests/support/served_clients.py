"""The served quality test's clients (tests/e2e/test_served_quality.py): the official `openai` client asking a route of
the router with the weather tool, streamed and not in turn, each answer kept as a `Reply` (its tier, its text, its
tool calls and whether they fit the tool's schema)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import jsonschema

WEATHER = {"type": "object", "properties": {"city": {"type": "string"},
                                              "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
           "required": ["city", "unit"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "lookup_weather", "description": "The weather in a city.",
                                           "parameters": WEATHER}}]


@dataclass
class Reply:
    route: str
    stream: bool
    sent: float  # time.time() when sent
    tier: str | None = None  # x-canary-tier
    error: str | None = None  # what the client raised
    content: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)  # (function name, arguments)

    @property
    def empty(self) -> bool:
        return not self.content.strip() and not self.calls

    def calls_valid(self) -> bool:
        try:
            for name, arguments in self.calls:
                assert name == "lookup_weather"
                jsonschema.validate(json.loads(arguments), WEATHER)
        except (AssertionError, ValueError, jsonschema.ValidationError):
            return False
        return bool(self.calls)


def ask(client: Any, route: str, stream: bool) -> Reply:
    reply = Reply(route, stream, time.time())
    tools = {"tools": TOOLS} if route != "chat" else {}
    prompt = "Please lookup the weather in Lisbon." if tools else "Hello"
    try:
        raw = client.chat.completions.with_raw_response.create(
            model=route, messages=[{"role": "user", "content": prompt}], stream=stream, **tools)
        reply.tier = raw.headers.get("x-canary-tier")
        answer = raw.parse()
        if not stream:
            message = answer.choices[0].message
            reply.content = message.content or ""
            reply.calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
            return reply
        calls: dict[int, list[str]] = {}
        for chunk in answer:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            reply.content += delta.content or ""
            for call in delta.tool_calls or []:
                name_args = calls.setdefault(call.index, ["", ""])
                name_args[0] += (call.function.name or "") if call.function else ""
                name_args[1] += (call.function.arguments or "") if call.function else ""
        reply.calls = [(n, a) for n, a in calls.values()]
    except Exception as exc:  # an SDK error is the router failing the client; anything else is said too
        reply.error = f"{type(exc).__name__}: {str(exc)[:200]}"
    return reply


def client_loop(base_url: str, route: str, replies: list[Reply], stop: threading.Event) -> None:
    """One client of `route`: streamed and not in turn, a request every ~0.25 s, until `stop`."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=60)
    stream = True
    while not stop.is_set():
        replies.append(ask(client, route, stream))
        stream = not stream
        stop.wait(0.25)
