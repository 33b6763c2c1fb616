"""Pure builders for what the router shell sends and records: headers, error bodies, events, savings rows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from provider_canary.router.reasons import FailoverReason
from provider_canary.router.routes import Route, Tier
from provider_canary.router.savings import PipelineResult, Savings
from provider_canary.router.tokens import TOKENIZER
from tasks.core.types import RouteEvent

#: Client headers passed on to the upstream (attribution only; never the client's Authorization).
FORWARD_HEADERS = ("http-referer", "x-title", "x-openrouter-title", "x-openrouter-categories")


#: OpenAI's `type` and string `code` of an error the router writes, by HTTP status (the codes OpenAI's own API
#: sends where it has one: `invalid_api_key`, `model_not_found`, `rate_limit_exceeded`; its 429s say `type`
#: "requests": tests/fixtures/openai/errors.json). A caller names a more precise code where it has one.
ERROR_KINDS: Mapping[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("requests", "rate_limit_exceeded"),
    499: ("invalid_request_error", "client_closed_request"),
    500: ("server_error", "router_error"),
    502: ("server_error", "upstream_error"),
    503: ("server_error", "all_tiers_failed"),
    504: ("server_error", "upstream_timeout"),
}
#: The longest Retry-After the router hands a client, in seconds: SDKs sleep what it says (the Node SDK up to
#: a minute per retry, longer waits are its own backoff's business), so one upstream's 300 s is never passed on.
MAX_CLIENT_RETRY_AFTER_S = 60


def error_body(status: int, message: str, *, code: str | None = None, param: str | None = None,
               **metadata: Any) -> dict[str, Any]:
    """OpenAI's error shape, `{"error": {"message", "type", "code", "param", "metadata"}}`: `type` and the string
    `code` from `ERROR_KINDS` (or `code` as given); `metadata` holds OpenRouter's numeric `code` (the status) and
    what else the caller says (`route`, `attempts`). Every error the router writes is built here."""
    kind, default_code = ERROR_KINDS.get(status, ("server_error" if status >= 500 else "invalid_request_error",
                                                  "error"))
    error: dict[str, Any] = {"message": message, "type": kind, "code": code or default_code, "param": param,
                             "metadata": {"code": status, **metadata}}
    return {"error": error}


def openai_error(message: str, type_: str, code: str, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape, which the SDKs read (`openai.AuthenticationError.code`, ...): `{"error": {"message",
    "type", "param", "code"}}`, `code` a string such as `invalid_api_key` or `rate_limit_exceeded`."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def retry_after_header(seconds: float | None) -> dict[str, str]:
    """`Retry-After` for a client: whole seconds, at least 1, at most `MAX_CLIENT_RETRY_AFTER_S`; none without."""
    if seconds is None or seconds != seconds or seconds <= 0:
        return {}
    return {"retry-after": str(max(1, min(MAX_CLIENT_RETRY_AFTER_S, math.ceil(seconds))))}


#: The 503 of a request that found no upstream connection free in the router's pool (the router's saturation).
OVERLOADED = openai_error("The router is overloaded: every upstream connection is busy (router.max_connections). "
                          "Please retry shortly.", "server_error", "router_overloaded")


def upstream_headers(
    tier: Tier, api_key: str | None, client_headers: Mapping[str, str], stream: bool
) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        "accept-encoding": "identity",  # the relay passes bytes on as they come (a compressed reply is decoded too)
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


@dataclass(frozen=True, slots=True)
class TierFailed:
    """A tier given up or skipped in one request's walk, as the client's error names it."""

    tier_no: int
    reason: FailoverReason
    retry_after_s: float | None = None  # the upstream's Retry-After, read (tasks/core/http_rules.py)


def walk_failed(
    route: Route, failures: Sequence[TierFailed], wait_s: float | None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Every tier failed or was skipped: (status, body, headers). 429 when every tier that was asked answered 429
    (its `Retry-After` the smallest an upstream gave), so a client's rate-limit handling runs; else 503, with
    `Retry-After` when every tier is cooling down or open (`wait_s`: until the first takes requests again)."""
    summary = ", ".join(f"tier {f.tier_no}: {f.reason}" for f in failures)
    meta: dict[str, Any] = {"route": route.key, "attempts": [{"tier": f.tier_no, "reason": str(f.reason)}
                                                             for f in failures]}
    sent = [f for f in failures if f.reason.was_sent]
    if sent and all(f.reason.is_rate_limited for f in sent):
        waits = [f.retry_after_s for f in sent if f.retry_after_s is not None and f.retry_after_s > 0]
        body = error_body(429, f"every tier is rate limited ({summary}); retry later", **meta)
        return 429, body, retry_after_header(min(waits) if waits else wait_s)
    body = error_body(503, f"all {len(route.tiers)} tiers failed ({summary})", **meta)
    return 503, body, retry_after_header(wait_s)
