"""The fleet's records: which models the simulator serves, their endpoints, and what each endpoint does wrong.

Frozen records and their defaults (provider_canary/simulator/FLEET.md documents the file).
provider_canary/simulator/fleet_schema.py is the file's schema (types, bounds, rules; its defaults are read from here);
provider_canary/simulator/fleet.py `parse_fleet` reads a mapping into these records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from provider_canary.simulator.faults import Fault

DEFAULT_FLEET_PATH = Path(__file__).parent / "fleets" / "default.toml"

DEFAULT_SUPPORTED_PARAMETERS: tuple[str, ...] = (
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "top_k",
    "repetition_penalty",
    "response_format",
    "structured_outputs",
    "tools",
    "tool_choice",
)

QUANTIZATIONS = frozenset(
    {"int4", "int8", "fp4", "mxfp4", "nvfp4", "fp6", "fp8", "mxfp8", "fp16", "bf16", "fp32", "unknown"}
)
STATUSES = frozenset({0, -1, -2, -3, -5, -10})


@dataclass(frozen=True)
class Percentiles:
    p50: float
    p75: float
    p90: float
    p99: float

    def as_dict(self) -> dict[str, float]:
        return {"p50": self.p50, "p75": self.p75, "p90": self.p90, "p99": self.p99}


@dataclass(frozen=True)
class EndpointSpec:
    """One provider route of a model, as `/endpoints` lists it, plus how it misbehaves."""

    tag: str
    provider_name: str
    quantization: str | None = "unknown"
    supported_parameters: tuple[str, ...] = DEFAULT_SUPPORTED_PARAMETERS
    prompt_price: str = "0.0000002"
    completion_price: str = "0.0000006"
    context_length: int = 131072
    max_completion_tokens: int | None = None
    status: int = 0
    uptime_last_30m: float | None = 99.8
    uptime_last_5m: float | None = 99.9
    uptime_last_1d: float | None = 99.7
    latency_last_30m: Percentiles | None = None
    throughput_last_30m: Percentiles | None = None
    ttft_s: float = 0.05
    chunk_interval_s: float = 0.005
    system_fingerprint: str | None = None
    faults: tuple[Fault, ...] = ()
    reports_cost: bool = True  # False: `usage` carries tokens but no `cost` (the canary estimates it)

    @property
    def provider_slug(self) -> str:
        return self.tag.split("/", 1)[0]


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    endpoints: tuple[EndpointSpec, ...]
    permaslug: str = ""
    description: str = ""
    created: int = 1733356800
    context_length: int = 131072

    def endpoint(self, tag: str) -> EndpointSpec | None:
        return next((e for e in self.endpoints if e.tag == tag), None)


@dataclass(frozen=True)
class Fleet:
    models: tuple[ModelSpec, ...]
    source: str = field(default="<mapping>", compare=False)

    def model(self, model_id: str) -> ModelSpec | None:
        return next((m for m in self.models if m.id == model_id), None)

    def providers(self) -> dict[str, str]:
        """Provider slug -> display name, over every endpoint of every model."""
        return {e.provider_slug: e.provider_name for m in self.models for e in m.endpoints}
