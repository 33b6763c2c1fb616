"""OpenRouter wire objects, built in the key order of the captures (docs/openrouter-api.md) and encoded as
compact JSON with JavaScript number formatting (`0.00000495`, `2687`), as OpenRouter's servers emit it.

Chat completions (stream chunks, the non-streamed result, usage), error bodies and protocol-violation bytes;
the catalog APIs' items (`/models`, `/endpoints`, `/providers`) are in provider_canary/simulator/catalog_wire.py."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from provider_canary.simulator.fleet import EndpointSpec

KEEPALIVE = b": OPENROUTER PROCESSING\n\n"
DONE = b"data: [DONE]\n\n"
USER_ID = "user_2simulatorCanary0000000"
ERROR_TYPES = {
    408: "timeout",
    429: "rate_limit_exceeded",
    500: "server",
    502: "provider_unavailable",
    503: "provider_overloaded",
    524: "timeout",
    529: "provider_overloaded",
}


def dumps(value: Any) -> str:
    """Compact JSON as JSON.stringify writes it (no spaces, raw UTF-8, JS number format)."""
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(json.dumps(str(k), ensure_ascii=False) + ":" + dumps(v) for k, v in value.items())
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if isinstance(value, float):
        return js_number(value)
    return json.dumps(value, ensure_ascii=False)


def js_number(x: float) -> str:
    if x != x or x in (float("inf"), float("-inf")):
        return "null"
    if x == int(x) and abs(x) < 1e21:
        return str(int(x))
    if abs(x) >= 1e-6:
        return format(Decimal(repr(x)), "f")
    mantissa, exp = f"{x:e}".split("e")
    return mantissa.rstrip("0").rstrip(".") + "e" + str(int(exp))


def sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + dumps(obj).encode("utf-8") + b"\n\n"


_PIECE = "\ue000canary-piece\ue000"  # a private-use marker: no head, model id or provider holds it


def text_frames(head: dict[str, Any], fingerprint: str | None, pieces: Sequence[str]) -> list[bytes]:
    """`sse(chunk(head, fingerprint, piece))` for each piece, byte for byte, from one template: the frames of a
    reply differ only in their content string, and encoding each whole chunk again was most of the
    simulator's CPU under load."""
    template = sse(chunk(head, fingerprint, _PIECE))
    marker = json.dumps(_PIECE, ensure_ascii=False).encode("utf-8")
    before, found, after = template.partition(marker)
    if not found or marker in after:
        return [sse(chunk(head, fingerprint, piece)) for piece in pieces]
    return [before + json.dumps(piece, ensure_ascii=False).encode("utf-8") + after for piece in pieces]


def generation_id(unix: int, rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits
    return f"gen-{unix}-" + "".join(rng.choice(alphabet) for _ in range(20))


def chunk_head(gen_id: str, created: int, model: str, provider: str) -> dict[str, Any]:
    return {
        "id": gen_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "provider": provider,
    }


def chunk(
    head: dict[str, Any],
    fingerprint: str | None,
    content: str,
    finish: str | None = None,
    native: str | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A 2026 stream chunk: id, object, created, model, provider, [system_fingerprint], choices, [usage]."""
    out = dict(head)
    if fingerprint:
        out["system_fingerprint"] = fingerprint
    out["choices"] = [
        {
            "index": 0,
            "delta": {"content": content, "role": "assistant"},
            "finish_reason": finish,
            "native_finish_reason": native,
        }
    ]
    if usage is not None:
        out["usage"] = usage
    return out


def tool_call_chunk(head: dict[str, Any], fingerprint: str | None, entry: dict[str, Any]) -> dict[str, Any]:
    """A stream chunk carrying one `delta.tool_calls` entry, as [REC-OC openrouter-streams-tool-call]:
    `{"content":null,"role":"assistant","tool_calls":[entry]}`, finish_reason null."""
    out = dict(head)
    if fingerprint:
        out["system_fingerprint"] = fingerprint
    out["choices"] = [
        {
            "index": 0,
            "delta": {"content": None, "role": "assistant", "tool_calls": [entry]},
            "finish_reason": None,
            "native_finish_reason": None,
        }
    ]
    return out


def tool_call_deltas(calls: Any) -> list[dict[str, Any]]:
    """The `delta.tool_calls` entries of planned calls (provider_canary.simulator.tools.PlannedCall), in stream order:
    per call a head `{"index","id","type":"function","function":{"name","arguments":""}}`, then
    `{"index","function":{"arguments":piece}}` per piece, starting with an empty one as the recording does."""
    out: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        out.append(
            {"index": i, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        )
        for piece in ("", *call.pieces):
            out.append({"index": i, "function": {"arguments": piece}})
    return out


def message_tool_calls(calls: Any) -> list[dict[str, Any]]:
    """Whole calls for a non-streamed `message.tool_calls` (OpenAI's shape plus `index`; unconfirmed)."""
    return [
        {"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for i, c in enumerate(calls)
    ]


def midstream_error_chunk(head: dict[str, Any], code: int, message: str) -> dict[str, Any]:
    out = dict(head)
    out["error"] = {
        "code": code,
        "message": message,
        "metadata": {"error_type": ERROR_TYPES.get(code, "server")},
    }
    out["choices"] = [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
    return out


def usage(prompt_tokens: int, completion_tokens: int, endpoint: EndpointSpec) -> dict[str, Any]:
    """The usage object, §3b order; the cost is the endpoint's listed pricing x tokens. An endpoint with
    ``reports_cost = false`` leaves out ``cost``, ``is_byok`` and ``cost_details`` (tokens only, as an
    OpenAI-compatible upstream that does not bill in credits would)."""
    prompt_cost = Decimal(endpoint.prompt_price) * prompt_tokens
    completion_cost = Decimal(endpoint.completion_price) * completion_tokens
    cost = float(prompt_cost + completion_cost)
    out: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if endpoint.reports_cost:
        out.update(cost=cost, is_byok=False)
    out["prompt_tokens_details"] = {
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "audio_tokens": 0,
        "video_tokens": 0,
    }
    if endpoint.reports_cost:
        out["cost_details"] = {
            "upstream_inference_cost": cost,
            "upstream_inference_prompt_cost": float(prompt_cost),
            "upstream_inference_completions_cost": float(completion_cost),
        }
    out["completion_tokens_details"] = {"reasoning_tokens": 0, "image_tokens": 0, "audio_tokens": 0}
    return out


def chat_result(
    head: dict[str, Any],
    fingerprint: str | None,
    content: str,
    finish: str,
    native: str,
    usage_obj: dict[str, Any],
    error: dict[str, Any] | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Non-streaming ChatResult in the 2026 order; `error` embeds a mid-generation failure in the choice;
    `tool_calls` (message_tool_calls) follow `reasoning` in the message."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "reasoning": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    choice: dict[str, Any] = {
        "index": 0,
        "logprobs": None,
        "finish_reason": finish,
        "native_finish_reason": native,
        "message": message,
    }
    if error is not None:
        choice["error"] = error
    out = {k: v for k, v in head.items() if k != "object"}
    return {
        "id": out["id"],
        "object": "chat.completion",
        "created": out["created"],
        "model": out["model"],
        "provider": out["provider"],
        "system_fingerprint": fingerprint,
        "choices": [choice],
        "usage": usage_obj,
    }


def error_body(
    message: str, code: int, metadata: dict[str, Any] | None = None, *, user: bool = True
) -> dict[str, Any]:
    """{"error":{"message","code",["metadata"]},["user_id"]}: message before code, as real bodies have it."""
    err: dict[str, Any] = {"message": message, "code": code}
    if metadata is not None:
        err["metadata"] = metadata
    out: dict[str, Any] = {"error": err}
    if user:
        out["user_id"] = USER_ID
    return out


def upstream_error(status: int, model_id: str, provider_name: str) -> dict[str, Any]:
    """The body of a provider failure before the stream (429/5xx), with the raw upstream text."""
    raw = {
        400: '{"error":{"message":"Invalid \'tools\': at most 64 tools are allowed.",'
        '"type":"invalid_request_error","param":"tools","code":null}}',
        408: "upstream request timed out",
        429: f"{model_id} is temporarily rate-limited upstream. Please retry shortly.",
        502: "upstream connect error or disconnect/reset before headers",
        503: "Service temporarily unavailable",
        524: "upstream timed out",
        529: "Overloaded",
    }
    if status == 500:
        return error_body("Internal Server Error", 500)
    meta = {"raw": raw.get(status, "error"), "provider_name": provider_name, "is_byok": False}
    return error_body("Provider returned error", status, meta)


# --- protocol violations (provider_canary/simulator/protocol.py) ------------------------------------------------------

#: Bytes that are not UTF-8: a truncated two-byte sequence, then bytes that never start one.
INVALID_UTF8 = b"\xc3\x28\xff\xfe"
#: A placeholder put in a reply's content, then replaced on the encoded bytes (never in a real reply).
MARKER = "\u2063SIMULATOR-MARK\u2063"


def around_marker(encoded: bytes) -> tuple[bytes, bytes]:
    """The bytes before and after `MARKER` in an encoded object (content was set to the marker)."""
    before, _, after = encoded.partition(MARKER.encode("utf-8"))
    return before, after


def html_page(provider_name: str) -> bytes:
    """The kind of page a CDN or proxy answers with 200 in front of a broken upstream."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{provider_name} | Service temporarily unavailable</title>\n</head>\n<body>\n"
        "<h1>Please wait while we check your browser...</h1>\n"
        "<p>The upstream did not answer. Ray ID: 8c2f0e1b9a7d4e21</p>\n</body>\n</html>\n"
    ).encode()
