"""Facts of the OpenRouter wire format shared by the probe, the simulator and the router."""

from __future__ import annotations

#: Keys OpenRouter accepts in a request's `provider` object (ProviderPreferences has
#: additionalProperties: false, so any other key is a 400), in the spec's order.
PROVIDER_KEYS: tuple[str, ...] = (
    "order",
    "allow_fallbacks",
    "require_parameters",
    "data_collection",
    "zdr",
    "enforce_distillable_text",
    "only",
    "ignore",
    "quantizations",
    "sort",
    "preferred_min_throughput",
    "preferred_max_latency",
    "max_price",
)
