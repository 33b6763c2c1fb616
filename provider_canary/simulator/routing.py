"""Provider routing as OpenRouter documents it (§2b): validate `provider`, then list candidate endpoints.

Matching: a base slug (`deepinfra`) matches every endpoint of that provider, a full tag (`deepinfra/fp8`)
exactly one; display names (`DeepInfra`) are accepted case-insensitively as the provider
(unconfirmed upstream).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from provider_canary.simulator.fleet import EndpointSpec, ModelSpec
from provider_canary.simulator.wire import dumps
from tasks.core.wire.provider_keys import PROVIDER_KEYS

_LIST_KEYS = ("order", "only", "ignore", "quantizations")
_BOOL_KEYS = ("allow_fallbacks", "require_parameters", "zdr", "enforce_distillable_text")

# Request fields that count as parameters for `require_parameters` (names of the `Parameter` enum).
PARAMETERS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "top_a",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "max_tokens",
    "max_completion_tokens",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "prediction",
    "seed",
    "response_format",
    "stop",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "include_reasoning",
    "reasoning",
    "reasoning_effort",
    "web_search_options",
    "verbosity",
)


@dataclass(frozen=True)
class Route:
    """Endpoints to try in order, and whether a failure may move on to the next one."""

    candidates: tuple[EndpointSpec, ...]
    allow_fallbacks: bool


class RoutingError(Exception):
    """The request cannot be routed: carries the HTTP status and the OpenRouter error body."""

    def __init__(self, status: int, message: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.metadata = status, message, metadata


def validate_provider(provider: Any) -> dict[str, Any]:
    """The `provider` object, or RoutingError 400 in the zod-like shape of a validation error."""
    if provider is None:
        return {}
    if not isinstance(provider, Mapping):
        raise _invalid([], "Expected object, received " + type(provider).__name__, "invalid_type")
    unknown = [k for k in provider if k not in PROVIDER_KEYS]
    if unknown:
        keys = ", ".join(f"'{k}'" for k in unknown)
        raise _invalid([], f"Unrecognized key(s) in object: {keys}", "unrecognized_keys", keys=unknown)
    for key in _LIST_KEYS:
        value = provider.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise _invalid([key], "Expected array of strings", "invalid_type")
    for key in _BOOL_KEYS:
        value = provider.get(key)
        if value is not None and not isinstance(value, bool):
            raise _invalid([key], "Expected boolean, received " + type(value).__name__, "invalid_type")
    return dict(provider)


def _invalid(path: list[str], message: str, code: str, **extra: Any) -> RoutingError:
    issue: dict[str, Any] = {"code": code, **extra, "path": ["provider", *path], "message": message}
    return RoutingError(400, dumps([issue]))


def matches(entry: str, ep: EndpointSpec) -> bool:
    e = entry.strip().lower()
    return e == ep.tag or e == ep.provider_slug or e == ep.provider_name.lower()


def requested_parameters(body: Mapping[str, Any]) -> list[str]:
    return [p for p in PARAMETERS if body.get(p) is not None]


def route(model: ModelSpec, body: Mapping[str, Any], prefs: Mapping[str, Any], seed: int) -> Route:
    """Candidates for this request, in the order they are tried."""
    endpoints = _allowed(model, prefs)
    endpoints = _able(endpoints, body, prefs)
    allow_fallbacks = prefs.get("allow_fallbacks", True) is not False
    order = prefs.get("order")
    if order:
        return Route(_ordered(model, endpoints, order, allow_fallbacks, prefs), allow_fallbacks)
    return Route(tuple(_balanced(endpoints, seed)), allow_fallbacks)


def _allowed(model: ModelSpec, prefs: Mapping[str, Any]) -> list[EndpointSpec]:
    """The model's endpoints that `only`, `ignore` and `quantizations` allow (404 when none is)."""
    endpoints = list(model.endpoints)
    only, ignore = prefs.get("only"), prefs.get("ignore") or []
    if only is not None:
        endpoints = [ep for ep in endpoints if any(matches(o, ep) for o in only)]
    endpoints = [ep for ep in endpoints if not any(matches(i, ep) for i in ignore)]
    quants = prefs.get("quantizations")
    if quants:
        endpoints = [ep for ep in endpoints if _quant_ok(ep.quantization, quants)]
    if not endpoints:
        raise _no_allowed(model, prefs)
    return endpoints


def _able(endpoints: list[EndpointSpec], body: Mapping[str, Any], prefs: Mapping[str, Any]) -> list[EndpointSpec]:
    """With `require_parameters`, only the endpoints supporting every requested parameter (404 when none does);
    else a `response_format` prefers the endpoints that support it."""
    if prefs.get("require_parameters"):
        wanted = requested_parameters(body)
        endpoints = [ep for ep in endpoints if all(p in ep.supported_parameters for p in wanted)]
        if not endpoints:
            raise RoutingError(404, "No endpoints found that can handle the requested parameters.")
    elif body.get("response_format") is not None:
        supporting = [ep for ep in endpoints if "response_format" in ep.supported_parameters]
        endpoints = supporting or endpoints
    return endpoints


def _ordered(model: ModelSpec, endpoints: list[EndpointSpec], order: Sequence[str], allow_fallbacks: bool,
             prefs: Mapping[str, Any]) -> tuple[EndpointSpec, ...]:
    """`order`'s endpoints first, in its order, then (with fallbacks) the rest (404 when nothing is left)."""
    primary: list[EndpointSpec] = []
    for entry in order:
        primary += [ep for ep in endpoints if matches(entry, ep) and ep not in primary]
    rest = [ep for ep in endpoints if ep not in primary]
    ordered = primary + (rest if allow_fallbacks else [])
    if not ordered:
        raise _no_allowed(model, prefs)
    return tuple(ordered)


def _quant_ok(quant: str | None, wanted: Sequence[str]) -> bool:
    q = quant or "unknown"
    return any(
        q == w or (w == "fp4" and q in ("mxfp4", "nvfp4")) or (w == "fp8" and q == "mxfp8") for w in wanted
    )


def _balanced(endpoints: list[EndpointSpec], seed: int) -> list[EndpointSpec]:
    """Default load balancing: first pick weighted by 1/price^2 (deterministic per seed), rest by price."""
    by_price = sorted(endpoints, key=lambda e: (Decimal(e.prompt_price) + Decimal(e.completion_price), e.tag))
    weights = [
        1.0 / float(max(Decimal(e.prompt_price) + Decimal(e.completion_price), Decimal("1e-12"))) ** 2
        for e in by_price
    ]
    first = random.Random(seed).choices(by_price, weights=weights)[0]
    return [first] + [e for e in by_price if e is not first]


def _no_allowed(model: ModelSpec, prefs: Mapping[str, Any]) -> RoutingError:
    requested = list(prefs.get("only") or []) + list(prefs.get("order") or [])
    available = sorted({ep.provider_slug for ep in model.endpoints})
    return RoutingError(
        404,
        "No allowed providers are available for the selected model.",
        {"available_providers": available, "requested_providers": requested},
    )
