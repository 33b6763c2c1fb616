"""The catalog APIs' wire objects: `/models`, `/models/{id}/endpoints` and `/providers` items, in the key order
of the captures (docs/openrouter-api.md). provider_canary/simulator/app.py serves them;
provider_canary/simulator/wire.py encodes them."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from provider_canary.simulator.faults import listing_figures
from provider_canary.simulator.fleet import EndpointSpec, ModelSpec, Percentiles

_DEFAULT_LATENCY = Percentiles(620, 910, 1420, 3180)
_DEFAULT_THROUGHPUT = Percentiles(38, 45, 51, 63)


def endpoint_entry(model: ModelSpec, ep: EndpointSpec, *, authenticated: bool,
                   now: datetime | None = None) -> dict[str, Any]:
    """One `/endpoints` item in the [CAP-K3] key order (an active `uptime_dip` fault at `now` lowers the
    uptimes and the status)."""
    latency = (ep.latency_last_30m or _DEFAULT_LATENCY).as_dict() if authenticated else None
    throughput = (ep.throughput_last_30m or _DEFAULT_THROUGHPUT).as_dict() if authenticated else None
    dip = listing_figures(ep.faults, now) if now is not None else {}
    entry = {
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
    return {**entry, **dip}  # same key order: only values change


def _architecture() -> dict[str, Any]:
    return {
        "tokenizer": "Llama3",
        "instruct_type": None,
        "modality": "text->text",
        "input_modalities": ["text"],
        "output_modalities": ["text"],
    }


def endpoints_payload(model: ModelSpec, *, authenticated: bool, now: datetime | None = None) -> dict[str, Any]:
    return {
        "data": {
            "id": model.id,
            "name": model.name,
            "created": model.created,
            "description": model.description,
            "architecture": _architecture(),
            "endpoints": [endpoint_entry(model, ep, authenticated=authenticated, now=now) for ep in model.endpoints],
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
