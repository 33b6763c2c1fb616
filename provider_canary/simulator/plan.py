"""Pure: what one endpoint answers to one request, given the fault it drew (or none).

The app (provider_canary/simulator/app.py) then plays the Plan as SSE or JSON (provider_canary/simulator/player.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from provider_canary.simulator import structured, text, tools
from provider_canary.simulator.faults import Fault
from provider_canary.simulator.fleet import EndpointSpec, ModelSpec
from provider_canary.simulator.language import detect_language


@dataclass(frozen=True)
class Plan:
    """The whole behaviour of one reply. Times are simulated seconds (the app applies time_scale)."""

    provider: str
    content: str
    pieces: tuple[str, ...]
    finish_reason: str = "stop"
    native_finish_reason: str = "stop"
    comments_before: int = 1
    first_delay_s: float = 0.05
    keepalive_s: float | None = None
    role_only_first: bool = False
    chunk_interval_s: float = 0.005
    stall_s: float | None = None
    cut_after: int | None = None
    error_after: int | None = None
    error_code: int = 502
    error_done: bool = False
    http_error: int | None = None
    retry_after_s: float = 0.0
    fault: str = "healthy"
    tool_calls: tuple[tools.PlannedCall, ...] = ()  # when set: no text, finish tool_calls


def last_user_text(messages: Any) -> str:
    """The text of the last user message (string content or the text parts of a content list)."""
    if not isinstance(messages, list):
        return ""
    for msg in reversed(messages):
        if isinstance(msg, Mapping) and msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(
                    str(p.get("text", ""))
                    for p in content
                    if isinstance(p, Mapping) and p.get("type") == "text"
                )
    return ""


def request_seed(body: Mapping[str, Any]) -> int:
    """Deterministic per request: the `seed` field if given, else a hash of model and messages."""
    seed = body.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed & 0x7FFFFFFF
    blob = json.dumps(
        [body.get("model"), body.get("messages")], sort_keys=True, ensure_ascii=False, default=str
    )
    return int.from_bytes(hashlib.sha256(blob.encode("utf-8")).digest()[:4], "big")


def is_structured(body: Mapping[str, Any]) -> bool:
    return structured.schema_of(body.get("response_format")) is not None


def has_tools(body: Mapping[str, Any]) -> bool:
    """A request offering function tools (fault kind `tools`; provider_canary/simulator/tools.py)."""
    return bool(tools.offered_tools(body))


def plan_reply(
    body: Mapping[str, Any], model: ModelSpec, endpoint: EndpointSpec, fault: Fault | None, seed: int
) -> Plan:
    lang = detect_language(last_user_text(body.get("messages")))
    kind = fault.kind if fault else "healthy"
    p: Mapping[str, Any] = fault.params if fault else {}
    schema = structured.schema_of(body.get("response_format"))
    content = _structured_content(schema, kind, p, lang, seed) if schema is not None else \
        _text_content(kind, p, lang, seed)
    content, finish, native = _content_fault(content, kind, p, lang)
    content, finish, native = _within_max_tokens(body, content, finish, native)

    calls: tuple[tools.PlannedCall, ...] = ()
    if schema is None and has_tools(body):
        user = last_user_text(body.get("messages"))
        calls = tools.plan_calls(body, user, kind, p, lang, seed)
        if calls:
            content, finish, native = "", "tool_calls", "tool_calls"

    unspaced = text.is_unspaced(lang) and schema is None
    pieces = (
        text.split_json(content, seed)
        if schema is not None
        else text.split_pieces(content, seed, unspaced=unspaced)
    )
    provider = endpoint.provider_name
    if kind == "pin_not_honoured":
        provider = str(p.get("served_by") or _other_provider(model, endpoint))

    plan = Plan(
        provider=provider,
        content=content,
        pieces=tuple(pieces),
        finish_reason=finish,
        native_finish_reason=native,
        comments_before=1 + seed % 3,
        first_delay_s=endpoint.ttft_s,
        chunk_interval_s=endpoint.chunk_interval_s,
        fault=kind,
        tool_calls=calls,
    )
    return _transport(plan, kind, p)


def _structured_content(schema: Mapping[str, Any], kind: str, p: Mapping[str, Any], lang: str, seed: int) -> str:
    """The JSON reply to a `response_format` request, with its structured fault (if any)."""
    reply_lang = p.get("to", lang) if kind == "language_switch" else lang
    value = structured.instance(schema, reply_lang, seed)
    if kind == "schema_violation":
        value = structured.violate(value, schema, str(p.get("mode", "missing_required")))
    content = structured.render(value, seed)
    if kind == "invalid_json":
        content = structured.make_invalid(content, str(p.get("mode", "truncated")))
    elif kind == "fenced_json":
        content = "```json\n" + content + "\n```"
    return content


def _text_content(kind: str, p: Mapping[str, Any], lang: str, seed: int) -> str:
    """The free-text reply, in the language its fault asks for."""
    if kind == "language_switch":
        return text.reply_text(str(p["to"]), seed)
    if kind == "language_mix":
        return text.mixed_reply(lang, str(p["with"]), seed)
    if kind == "corrupted_opening":
        prefixes = list(p.get("prefixes") or ['",'])
        return prefixes[seed % len(prefixes)] + text.action_opening_reply(lang, seed)
    return text.reply_text(lang, seed)


def _content_fault(content: str, kind: str, p: Mapping[str, Any], lang: str) -> tuple[str, str, str]:
    """(content, finish_reason, native_finish_reason) after a fault that changes the reply's text."""
    if kind == "mojibake":
        return text.mojibake(content, str(p.get("codec", "cp1252"))), "stop", "stop"
    if kind == "refusal":
        return str(p.get("text") or text.refusal_text(lang)), "stop", "stop"
    if kind == "content_filter":
        return text.first_words(content, int(p.get("keep_words", 0))), "content_filter", "SAFETY"
    if kind == "empty_reply":
        return "", "stop", "stop"
    if kind == "truncated":
        return text.first_words(content, int(p.get("words", 4))), "length", "length"
    return content, "stop", "stop"


def _within_max_tokens(body: Mapping[str, Any], content: str, finish: str, native: str) -> tuple[str, str, str]:
    """The reply cut at the request's `max_tokens` (`max_completion_tokens`), finishing for `length` then."""
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0:
        if text.estimate_tokens(content) > max_tokens:
            return _cut_to_tokens(content, max_tokens), "length", "length"
    return content, finish, native


def _transport(plan: Plan, kind: str, p: Mapping[str, Any]) -> Plan:
    if kind == "slow_first_token":
        return replace(plan, first_delay_s=float(p["delay_s"]), keepalive_s=float(p["keepalive_s"]))
    if kind == "role_only_then_slow":
        return replace(plan, role_only_first=True, first_delay_s=float(p["delay_s"]))
    if kind == "stall_after_headers":
        return replace(plan, stall_s=float(p["max_s"]))
    if kind == "die_after_tokens":
        return replace(plan, cut_after=int(p["tokens"]))
    if kind == "http_error_before_stream":
        return replace(plan, http_error=int(p["status"]), retry_after_s=float(p["retry_after_s"]))
    if kind == "midstream_error":
        return replace(
            plan, error_after=int(p["tokens"]), error_code=int(p["code"]), error_done=bool(p["done"])
        )
    return plan


def _cut_to_tokens(content: str, max_tokens: int) -> str:
    out = ""
    for piece in text.split_pieces(content, 0, unspaced=" " not in content):
        if text.estimate_tokens(out + piece) > max_tokens:
            break
        out += piece
    return out.rstrip()


def _other_provider(model: ModelSpec, endpoint: EndpointSpec) -> str:
    return next(
        (e.provider_name for e in model.endpoints if e.provider_name != endpoint.provider_name), "OpenRouter"
    )
