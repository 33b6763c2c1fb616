"""OpenRouter wire objects, built in the key order of the captures (docs/openrouter-api.md) and encoded as
compact JSON with JavaScript number formatting (`0.00000495`, `2687`), as OpenRouter's servers emit it."""

from __future__ import annotations

import json
import random
import string
from decimal import Decimal
from typing import Any

from simulator.fleet import EndpointSpec, ModelSpec, Percentiles

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
_DEFAULT_LATENCY = Percentiles(620, 910, 1420, 3180)
_DEFAULT_THROUGHPUT = Percentiles(38, 45, 51, 63)


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
    """The `delta.tool_calls` entries of planned calls (simulator.tools.PlannedCall), in stream order:
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


def endpoint_entry(model: ModelSpec, ep: EndpointSpec, *, authenticated: bool) -> dict[str, Any]:
    """One `/endpoints` item in the [CAP-K3] key order."""
    latency = (ep.latency_last_30m or _DEFAULT_LATENCY).as_dict() if authenticated else None
    throughput = (ep.throughput_last_30m or _DEFAULT_THROUGHPUT).as_dict() if authenticated else None
    return {
        "name": f"{ep.provider_name} | {model.permaslug or model.id}",
        "model_id": model.id,
        "model_name": model.name,
        "context_length": ep.context_length,
        "pricing": {"prompt": ep.prompt_price, "completion": ep.completion_price, "discount": 0},
        "provider_name": ep.provider_name,
        "tag": ep.tag,
        "quantization": ep.quantization,
        "max_completion_tokens": ep.max_completion_tokens,
        "max_prompt_tokens": None,
        "supported_parameters": list(ep.supported_parameters),
        "status": ep.status,
        "uptime_last_30m": ep.uptime_last_30m,
        "uptime_last_5m": ep.uptime_last_5m,
        "uptime_last_1d": ep.uptime_last_1d,
        "supports_implicit_caching": False,
        "supports_voice_cloning": False,
        "latency_last_30m": latency,
        "throughput_last_30m": throughput,
    }


def _architecture() -> dict[str, Any]:
    return {
        "tokenizer": "Llama3",
        "instruct_type": None,
        "modality": "text->text",
        "input_modalities": ["text"],
        "output_modalities": ["text"],
    }


def endpoints_payload(model: ModelSpec, *, authenticated: bool) -> dict[str, Any]:
    return {
        "data": {
            "id": model.id,
            "name": model.name,
            "created": model.created,
            "description": model.description,
            "architecture": _architecture(),
            "endpoints": [endpoint_entry(model, ep, authenticated=authenticated) for ep in model.endpoints],
        }
    }


def model_entry(model: ModelSpec) -> dict[str, Any]:
    """A `/models` item in the docs-table order (wire order unconfirmed)."""
    cheapest = min(model.endpoints, key=lambda e: Decimal(e.prompt_price))
    params = sorted({p for e in model.endpoints for p in e.supported_parameters})
    return {
        "id": model.id,
        "canonical_slug": model.permaslug or model.id,
        "hugging_face_id": None,
        "name": model.name,
        "created": model.created,
        "description": model.description,
        "context_length": model.context_length,
        "architecture": _architecture(),
        "pricing": {"prompt": cheapest.prompt_price, "completion": cheapest.completion_price},
        "top_provider": {
            "context_length": cheapest.context_length,
            "max_completion_tokens": cheapest.max_completion_tokens,
            "is_moderated": False,
        },
        "per_request_limits": None,
        "supported_parameters": params,
        "default_parameters": None,
        "supported_voices": None,
        "links": {"details": f"/api/v1/models/{model.id}/endpoints"},
    }


def provider_entry(slug: str, name: str) -> dict[str, Any]:
    """A `/providers` item in the order of the real DeepInfra item."""
    return {
        "name": name,
        "slug": slug,
        "headquarters": None,
        "datacenters": None,
        "privacy_policy_url": None,
        "terms_of_service_url": None,
        "status_page_url": None,
    }


# --- protocol violations (simulator/protocol.py) ---------------------------------------------------------

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
