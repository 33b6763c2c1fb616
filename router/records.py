"""Pure builders for what the router shell sends and records: headers, error bodies, events, savings rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from router.routes import Route, Tier
from router.savings import PipelineResult, Savings
from router.tokens import TOKENIZER
from tasks.core.types import RouteEvent

#: Client headers passed on to the upstream (attribution only; never the client's Authorization).
FORWARD_HEADERS = ("http-referer", "x-title", "x-openrouter-title", "x-openrouter-categories")


def error_body(status: int, message: str, **metadata: Any) -> dict[str, Any]:
    """OpenRouter's error shape: `{"error": {"message", "code", ["metadata"]}}`."""
    error: dict[str, Any] = {"message": message, "code": status}
    if metadata:
        error["metadata"] = metadata
    return {"error": error}


def openai_error(message: str, type_: str, code: str, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape, which the SDKs read (`openai.AuthenticationError.code`, ...): `{"error": {"message",
    "type", "param", "code"}}`, `code` a string such as `invalid_api_key` or `rate_limit_exceeded`."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


#: The 503 of a request that found no upstream connection free in the router's pool (the router's saturation).
OVERLOADED = openai_error("The router is overloaded: every upstream connection is busy (router.max_connections). "
                          "Please retry shortly.", "server_error", "router_overloaded")


def upstream_headers(
    tier: Tier, api_key: str | None, client_headers: Mapping[str, str], stream: bool
) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
    }
    for name in FORWARD_HEADERS:
        if name in client_headers:
            headers[name] = client_headers[name]
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def header_value(text: str) -> str:
    """`text` fit for an HTTP header: printable ASCII kept, anything else (and `%`) percent-encoded as UTF-8."""
    if text.isascii() and text.isprintable() and "%" not in text:
        return text
    return "".join(c if c.isascii() and c.isprintable() and c != "%" else quote(c, safe="") for c in text)


def response_headers(
    route: Route, tier_no: int, savings: Savings, pipeline: PipelineResult, passed: Mapping[str, str]
) -> dict[str, str]:
    headers = {
        **passed,
        "x-canary-route": header_value(route.key),
        "x-canary-tier": str(tier_no),
        "x-canary-tokens-saved": str(savings.tokens_saved),
        "x-canary-tokens-sent": str(savings.tokens_sent),
        "x-canary-tokenizer": TOKENIZER,
    }
    if pipeline.failed:
        headers["x-canary-savers-failed"] = pipeline.failed.split(":", 1)[0]
    return headers


def route_event(
    at: datetime, route: Route, tier_no: int, reason: str, latency_ms: float | None, model: str | None,
    client: str | None = None,
) -> RouteEvent:
    return RouteEvent(
        at=at,
        key=route.key,
        tier=tier_no,
        upstream=route.tiers[tier_no - 1].label,
        reason=reason,
        latency_ms=round(latency_ms, 1) if latency_ms is not None else None,
        model=model,
        client=client,
    )


def savings_record(
    at: datetime,
    route: Route,
    tier_no: int,
    pipeline: PipelineResult,
    savings: Savings,
    billed: int | None,
    stream: bool,
) -> dict[str, Any]:
    """One line of `savings_path`: the measured counts with the upstream's billed count beside them."""
    return {
        "at": at.isoformat(),
        "key": route.key,
        "tier": tier_no,
        "stream": stream,
        "tokenizer": TOKENIZER,
        "tokens_before": savings.tokens_before,
        "tokens_sent": savings.tokens_sent,
        "tokens_saved": savings.tokens_saved,
        "billed_prompt_tokens": billed,
        "savers": list(pipeline.applied),
        "saver_failed": pipeline.failed,
    }


def all_failed(
    route: Route, failures: Sequence[tuple[int, str]], wait_s: float | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The 503 body (and headers: Retry-After when every tier is cooling, `wait_s` given)."""
    summary = ", ".join(f"tier {n}: {reason}" for n, reason in failures)
    body = error_body(
        503,
        f"all {len(route.tiers)} tiers failed ({summary})",
        route=route.key,
        attempts=[{"tier": n, "reason": r} for n, r in failures],
    )
    return body, ({"retry-after": str(max(1, round(wait_s)))} if wait_s is not None else {})
