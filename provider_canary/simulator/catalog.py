"""A large simulated catalog generated from a compact spec: N models x M endpoints, deterministic by seed.

    fleet = catalog_fleet(models=100, endpoints=15, faulty_share=0.05, slow_start_share=0.067, seed=7)

or, in a fleet file, a `[catalog]` table instead of `[[models]]` (provider_canary/simulator/FLEET.md). The mix:

* healthy endpoints: no fault, first text after `base_delay_s` x a seeded factor in [1 - jitter, 1 + jitter];
* `round(total * faulty_share)` faulty endpoints, each with one fault of `fault_kinds` (taken in turn, so the
  kinds are spread evenly), every one of which fails a contract quickly (no stalls by default);
* `round(total * slow_start_share)` slow starts: `slow_first_token` after `slow_start_s` with keep-alives
  every `keepalive_s`, on every request (with the 10 s TTFT default they fail the ttft contract).

Which endpoints are faulty or slow is a seeded shuffle over all (model, endpoint) pairs: the counts are exact.
`endpoint_role` and `planned_first_token_s` tell a benchmark what the simulator meant each endpoint to do.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from provider_canary.simulator.fleet import EndpointSpec, Fleet, parse_fleet

#: Fault tables (fleet-file shape) given to faulty endpoints in turn; each fails a probed contract, fast.
DEFAULT_FAULT_MIX: tuple[Mapping[str, Any], ...] = (
    {"kind": "corrupted_opening", "rate": 0.95},
    {"kind": "http_error_before_stream", "status": 503},
    {"kind": "language_switch", "to": "ko", "applies_to": "text"},
    {"kind": "invalid_json"},
    {"kind": "die_after_tokens", "tokens": 2},
    {"kind": "refusal"},
    {"kind": "midstream_error", "tokens": 3, "code": 502},
    {"kind": "mojibake"},
    {"kind": "schema_violation", "mode": "missing_required"},
    {"kind": "empty_reply"},
    {"kind": "pin_not_honoured"},
    {"kind": "content_filter"},
)

_PROVIDERS: tuple[tuple[str, str], ...] = (
    ("deepinfra", "DeepInfra"),
    ("fireworks", "Fireworks"),
    ("together", "Together"),
    ("sambanova", "SambaNova"),
    ("cerebras", "Cerebras"),
    ("parasail", "Parasail"),
    ("hyperbolic", "Hyperbolic"),
    ("gmicloud", "GMICloud"),
    ("novita", "NovitaAI"),
    ("lambda", "Lambda"),
    ("nebius", "Nebius AI Studio"),
    ("groq", "Groq"),
    ("baseten", "Baseten"),
    ("friendli", "Friendli"),
    ("nscale", "Nscale"),
    ("crusoe", "Crusoe"),
    ("atlas-cloud", "AtlasCloud"),
    ("chutes", "Chutes"),
    ("siliconflow", "SiliconFlow"),
    ("cloudflare", "Cloudflare"),
)
_AUTHORS = ("meta-llama", "mistralai", "qwen", "google", "deepseek", "microsoft", "nvidia", "cohere")
_QUANTS = ("fp8", "fp8", "bf16", "fp16", "int8", "fp4", "unknown")


@dataclass(frozen=True)
class CatalogSpec:
    """What to generate. Defaults: issue 12's catalog (100 x 15, 5 % faulty, about one slow start a model)."""

    models: int = 100
    endpoints: int = 15
    faulty_share: float = 0.05
    slow_start_share: float = 0.067
    slow_start_s: float = 12.0
    keepalive_s: float = 2.0
    base_delay_s: float = 0.3
    jitter: float = 0.2
    chunk_interval_s: float = 0.002
    seed: int = 0
    fault_kinds: tuple[Mapping[str, Any], ...] = DEFAULT_FAULT_MIX

    def counts(self) -> tuple[int, int]:
        """(faulty, slow-start) endpoint counts: exact, disjoint, never more than the catalog holds."""
        total = self.models * self.endpoints
        faulty = min(total, round(total * self.faulty_share))
        slow = min(total - faulty, round(total * self.slow_start_share))
        return faulty, slow


def catalog_fleet(**spec: Any) -> Fleet:
    """The generated catalog as a validated Fleet; keyword arguments are CatalogSpec's fields."""
    return fleet_from_spec(CatalogSpec(**spec))


def fleet_from_spec(spec: CatalogSpec) -> Fleet:
    fleet = parse_fleet({"models": catalog_models(spec)})
    return Fleet(models=fleet.models, source=f"catalog({_describe(spec)})")


#: Faults OpenRouter's own uptime would see (requests that error); quality faults leave it high.
_UPTIME_FAULTS = frozenset({"http_error_before_stream", "die_after_tokens", "midstream_error"})


def _listing_figures(rng: random.Random, fault: Mapping[str, Any] | None) -> dict[str, Any]:
    """Realistic listing figures: healthy endpoints around 99 % (one in eight without a 5-minute figure: too
    little traffic), endpoints whose requests error far lower."""
    day = round(rng.uniform(98.5, 99.95), 3)
    thirty = round(min(100.0, max(0.0, day + rng.uniform(-0.6, 0.4))), 3)
    five: float | None = round(min(100.0, max(0.0, thirty + rng.uniform(-0.8, 0.5))), 3)
    if fault is not None and fault.get("kind") in _UPTIME_FAULTS:
        five, thirty, day = round(rng.uniform(35, 70), 3), round(rng.uniform(60, 80), 3), round(rng.uniform(85, 95), 3)
    elif rng.random() < 0.125:
        five = None
    return {"uptime_last_5m": five, "uptime_last_30m": thirty, "uptime_last_1d": day}


def catalog_models(spec: CatalogSpec) -> list[dict[str, Any]]:
    """The `models` list of a fleet file (plain TOML-shaped dicts), deterministic by `spec.seed`."""
    rng = random.Random(spec.seed)
    pairs = [(m, e) for m in range(spec.models) for e in range(spec.endpoints)]
    rng.shuffle(pairs)
    n_faulty, n_slow = spec.counts()
    faults: dict[tuple[int, int], Mapping[str, Any]] = {}
    for i, pair in enumerate(pairs[:n_faulty]):
        faults[pair] = spec.fault_kinds[i % len(spec.fault_kinds)]
    slow = {"kind": "slow_first_token", "delay_s": spec.slow_start_s, "keepalive_s": spec.keepalive_s}
    for pair in pairs[n_faulty : n_faulty + n_slow]:
        faults[pair] = slow
    figures = random.Random(spec.seed + 1)  # its own stream: the fleet's other choices stay as they were
    models = []
    for m in range(spec.models):
        author = _AUTHORS[m % len(_AUTHORS)]
        model_id = f"{author}/catalog-{m:03d}"
        offset = rng.randrange(len(_PROVIDERS))
        endpoints = []
        for e in range(spec.endpoints):
            slug, name = _PROVIDERS[(offset + e) % len(_PROVIDERS)]
            variant = e // len(_PROVIDERS)
            quant = _QUANTS[rng.randrange(len(_QUANTS))]
            factor = 1 + spec.jitter * (2 * rng.random() - 1)
            endpoint: dict[str, Any] = {
                "tag": slug if variant == 0 else f"{slug}/v{variant}",
                "provider_name": name,
                "quantization": quant,
                "pricing": {
                    "prompt": f"{rng.randrange(5, 120) / 1e8:.8f}",
                    "completion": f"{rng.randrange(10, 300) / 1e8:.8f}",
                },
                "ttft_s": round(spec.base_delay_s * factor, 4),
                "chunk_interval_s": spec.chunk_interval_s,
            }
            if (m, e) in faults:
                endpoint["faults"] = [dict(faults[(m, e)])]
            endpoint.update(_listing_figures(figures, faults.get((m, e))))
            endpoints.append(endpoint)
        models.append(
            {
                "id": model_id,
                "name": f"Catalog {m:03d} ({author})",
                "permaslug": model_id,
                "created": 1733356800 + m * 86400,
                "endpoints": endpoints,
            }
        )
    return models


def endpoint_role(endpoint: EndpointSpec) -> str:
    """`healthy`, `slow_start`, or the kind of the endpoint's first fault."""
    if not endpoint.faults:
        return "healthy"
    kind = endpoint.faults[0].kind
    return "slow_start" if kind == "slow_first_token" else kind


def planned_first_token_s(endpoint: EndpointSpec) -> float:
    """Simulated seconds from request to first text the simulator plans (before time_scale)."""
    for fault in endpoint.faults:
        if fault.kind in ("slow_first_token", "role_only_then_slow"):
            return float(fault.params["delay_s"])
    return endpoint.ttft_s


def roles(fleet: Fleet) -> dict[tuple[str, str], str]:
    """(model, tag) -> endpoint_role, over the whole fleet."""
    return {(m.id, e.tag): endpoint_role(e) for m in fleet.models for e in m.endpoints}


def role_counts(fleet: Fleet) -> dict[str, int]:
    out: dict[str, int] = {}
    for role in roles(fleet).values():
        out[role] = out.get(role, 0) + 1
    return dict(sorted(out.items()))


def catalog_toml(spec: CatalogSpec) -> str:
    """A fleet file holding `spec` as a `[catalog]` table (fault_kinds are not expressible there)."""
    lines = ["# A generated catalog (provider_canary/simulator/catalog.py); format: "
             "provider_canary/simulator/FLEET.md", "[catalog]"]
    for f in fields(spec):
        if f.name == "fault_kinds":
            continue
        value = asdict(spec)[f.name]
        lines.append(f"{f.name} = {value!r}")
    return "\n".join(lines) + "\n"


def _describe(spec: CatalogSpec) -> str:
    faulty, slow = spec.counts()
    return f"{spec.models}x{spec.endpoints}, {faulty} faulty, {slow} slow starts, seed {spec.seed}"
