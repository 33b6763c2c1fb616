"""Discovery: which endpoints serve a model (OpenRouter ``GET /models/{author}/{slug}/endpoints``, §1a).

`parse_endpoints` is pure and tolerant: a missing optional field is None/empty, a malformed item is skipped,
never a crash. `fetch_endpoints` is the I/O: failures the operator must fix are `ConfigError` (unknown model,
rejected key), an unreachable or failing API is `DiscoveryUnreachable` (a `CanaryError` whose one line names
the base URL, never the key; it is also an `httpx.TransportError`, so a retry policy on transport errors
retries it). Its `outage` says the listing is there but failing for now (a timeout, HTTP 408/429/5xx): the
upstream's trouble, never the config's, so `canary run`'s pre-flight lets the round run and record it failed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from tasks.core.http_rules import is_try_again_status
from tasks.core.plan import is_model_id
from tasks.core.types import Endpoint
from tasks.errors import CanaryError, ConfigError
from tasks.runtime.secrets import strip_userinfo

#: Default timeout for the discovery request when the client has none of its own (seconds).
DEFAULT_DISCOVERY_TIMEOUT_S = 15.0
#: Bytes of a discovery reply read at most (a real one is a few KB per endpoint).
MAX_DISCOVERY_BYTES = 8 * 1024 * 1024


class DiscoveryUnreachable(CanaryError, httpx.TransportError):
    """The endpoints API could not be reached or failed (network error, timeout, 5xx, garbage body).

    `outage`: it timed out or answered a try-again status (`status`: 408, 429, 5xx), so it is there and failing
    for now; otherwise (a refused connection, an unknown host, an answer that is not a listing) the base URL
    may well be wrong."""

    def __init__(self, message: str, *, outage: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.outage = outage
        self.status = status


def endpoints_path(model: str) -> str:
    """``/models/{author}/{slug}/endpoints`` with each part URL-encoded (``:free`` → ``%3Afree``)."""
    if not is_model_id(model):
        raise ConfigError(f"config: model must look like 'author/slug', without spaces or control characters "
                          f"(got {model!r})")
    author, _, slug = model.partition("/")
    return f"/models/{quote(author, safe='')}/{quote(slug, safe='')}/endpoints"


def parse_endpoints(model: str, payload: Any) -> list[Endpoint]:
    """The endpoints of `payload` (``{"data": {"endpoints": [...]}}``), sorted by tag, one per tag.

    An item needs a non-empty string ``tag`` and ``provider_name``; anything else is optional and kept only
    when it has the documented type.
    """
    data = payload.get("data") if isinstance(payload, Mapping) else None
    items = data.get("endpoints") if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        return []
    found: dict[str, Endpoint] = {}
    for item in items:
        endpoint = _endpoint(model, item)
        if endpoint is not None and endpoint.tag not in found:
            found[endpoint.tag] = endpoint
    return [found[tag] for tag in sorted(found)]


def _endpoint(model: str, item: Any) -> Endpoint | None:
    if not isinstance(item, Mapping):
        return None
    tag, provider = item.get("tag"), item.get("provider_name")
    if not (isinstance(tag, str) and tag.strip() and isinstance(provider, str) and provider.strip()):
        return None
    quantization = item.get("quantization")
    params = item.get("supported_parameters")
    if not isinstance(params, list):
        params = []
    return Endpoint(
        model=model,
        tag=tag.strip(),
        provider_name=provider.strip(),
        quantization=quantization if isinstance(quantization, str) and quantization else None,
        supported_parameters=tuple(p for p in params if isinstance(p, str)),
        status=_int(item.get("status")),
        context_length=_int(item.get("context_length")),
        **_pricing(item.get("pricing")),
        **_signals(item),
    )


#: Percentile keys of `latency_last_30m` / `throughput_last_30m` (§1a).
PERCENTILES = ("p50", "p75", "p90", "p99")


def _signals(item: Mapping[str, Any]) -> dict[str, float | None]:
    """OpenRouter's per-endpoint figures (§1a): uptimes in percent 0..100, TTFT percentiles in ms, throughput
    percentiles in tokens/s. A value that is null, missing or out of range is None (too little data, or an
    unauthenticated listing)."""
    out: dict[str, float | None] = {
        key: _uptime(item.get(key)) for key in ("uptime_last_5m", "uptime_last_30m", "uptime_last_1d")
    }
    for field_name, prefix, suffix in (("latency_last_30m", "latency", "_ms"),
                                       ("throughput_last_30m", "throughput", "")):
        stats = item.get(field_name)
        stats = stats if isinstance(stats, Mapping) else {}
        for p in PERCENTILES:
            out[f"{prefix}_{p}{suffix}"] = _price(stats.get(p))
    return out


def _uptime(value: Any) -> float | None:
    number = _price(value)
    return number if number is not None and number <= 100 else None


def _pricing(value: Any) -> dict[str, float | None]:
    """The listed prices in USD (§1a: decimal strings per token, ``request`` per request), each times
    ``1 - discount``. A price that is missing, negative or not a finite number is None (not listed)."""
    pricing = value if isinstance(value, Mapping) else {}
    discount = _price(pricing.get("discount")) or 0.0
    factor = 1.0 - min(discount, 1.0)

    def listed(key: str) -> float | None:
        price = _price(pricing.get(key))
        return None if price is None else price * factor

    return {
        "prompt_price_usd": listed("prompt"),
        "completion_price_usd": listed("completion"),
        "request_price_usd": listed("request"),
    }


def _price(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        price = float(value)
    except ValueError:
        return None
    return price if math.isfinite(price) and price >= 0 else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def fetch_endpoints(
    client: httpx.Client,
    base_url: str,
    api_key: str | None,
    model: str,
    *,
    timeout_s: float | None = None,
) -> list[Endpoint]:
    """GET the model's endpoints. The key is optional for OpenRouter (it only adds latency stats)."""
    url = base_url.rstrip("/") + endpoints_path(model)
    base = strip_userinfo(base_url.rstrip("/"))  # what messages show: never the URL's password
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    timeout: Any = httpx.USE_CLIENT_DEFAULT if timeout_s is None else timeout_s
    try:
        with client.stream("GET", url, headers=headers, timeout=timeout) as response:
            status = response.status_code
            raw = _read_capped(response) if status == 200 else b""
    except DiscoveryUnreachable:
        raise
    except httpx.HTTPError as exc:
        raise DiscoveryUnreachable(f"discovery: cannot reach {base} ({type(exc).__name__})",
                                   outage=isinstance(exc, httpx.TimeoutException)) from None
    if status == 404:
        raise ConfigError(f"config: unknown model {model!r} (no endpoints at {base})")
    if status in (401, 403):
        raise ConfigError(f"config: OPENROUTER_API_KEY was rejected by {base} (HTTP {status})")
    if status != 200:
        raise DiscoveryUnreachable(f"discovery: {base} answered HTTP {status} for {model}",
                                   outage=is_try_again_status(status), status=status)
    try:
        payload = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        raise DiscoveryUnreachable(f"discovery: {base} returned a non-JSON body for {model}") from None
    if not isinstance(payload, Mapping) or not isinstance(payload.get("data"), Mapping):
        raise DiscoveryUnreachable(f"discovery: {base} returned an unexpected body for {model} (no data)")
    return parse_endpoints(model, payload)


def _read_capped(response: httpx.Response) -> bytes:
    parts: list[bytes] = []
    size = 0
    for data in response.iter_bytes():
        parts.append(data)
        size += len(data)
        if size > MAX_DISCOVERY_BYTES:
            raise DiscoveryUnreachable(f"discovery: reply larger than {MAX_DISCOVERY_BYTES} bytes")
    return b"".join(parts)
