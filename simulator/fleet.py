"""The fleet file: which models the simulator serves, their endpoints, and what each endpoint does wrong.

Format documented in simulator/FLEET.md. `parse_fleet` validates a `[[models]]` mapping and raises `FleetError`
with one line naming the key path and the bad value. A fleet file (listed models, or a generated `[catalog]`)
is read by simulator/fleet_file.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator import fleet_values as v
from simulator.faults import FAULT_KINDS, REQUEST_KINDS, Fault, Window
from simulator.fleet_values import Percentiles
from tasks.errors import FleetError

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


def parse_fleet(mapping: Mapping[str, Any]) -> Fleet:
    """Validate a parsed fleet mapping; FleetError names the first bad key and its value."""
    v.only_keys(mapping, {"models"}, "fleet")
    models = v.list_of_tables(mapping.get("models"), "models", required=True)
    parsed = tuple(_model(m, f"models[{i}]") for i, m in enumerate(models))
    ids = [m.id for m in parsed]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise FleetError(f"fleet: models: duplicate model id {dupes[0]!r}")
    names: dict[str, str] = {}
    for model in parsed:
        for ep in model.endpoints:
            seen = names.setdefault(ep.provider_slug, ep.provider_name)
            if seen != ep.provider_name:
                names_seen = f"({seen!r}, {ep.provider_name!r})"
                raise FleetError(
                    f"fleet: provider slug {ep.provider_slug!r} has two display names {names_seen}"
                )
    return Fleet(models=parsed)


_MODEL_KEYS = {"id", "name", "permaslug", "description", "created", "context_length", "endpoints"}
_ENDPOINT_KEYS = {
    "tag",
    "provider_name",
    "quantization",
    "supported_parameters",
    "pricing",
    "context_length",
    "max_completion_tokens",
    "status",
    "uptime_last_30m",
    "uptime_last_5m",
    "uptime_last_1d",
    "latency_last_30m",
    "throughput_last_30m",
    "ttft_s",
    "chunk_interval_s",
    "system_fingerprint",
    "faults",
    "reports_cost",
}


def _model(m: Mapping[str, Any], where: str) -> ModelSpec:
    v.only_keys(m, _MODEL_KEYS, where)
    model_id = v.string(m, "id", where, required=True)
    if "/" not in model_id:
        raise FleetError(f"fleet: {where}.id must look like 'author/slug' (got {model_id!r})")
    eps = v.list_of_tables(m.get("endpoints"), f"{where}.endpoints", required=True)
    endpoints = tuple(_endpoint(e, f"{where}.endpoints[{i}]") for i, e in enumerate(eps))
    tags = [e.tag for e in endpoints]
    dupes = sorted({t for t in tags if tags.count(t) > 1})
    if dupes:
        raise FleetError(f"fleet: {where}.endpoints: duplicate tag {dupes[0]!r}")
    return ModelSpec(
        id=model_id,
        name=v.string(m, "name", where) or model_id,
        permaslug=v.string(m, "permaslug", where) or model_id,
        description=v.string(m, "description", where) or "",
        created=v.integer(m, "created", where, 1733356800),
        context_length=v.integer(m, "context_length", where, 131072),
        endpoints=endpoints,
    )


def _endpoint(e: Mapping[str, Any], where: str) -> EndpointSpec:
    v.only_keys(e, _ENDPOINT_KEYS, where)
    tag = v.string(e, "tag", where, required=True)
    if tag != tag.lower() or not tag or tag.startswith("/") or tag.endswith("/") or " " in tag:
        raise FleetError(f"fleet: {where}.tag must be a lower-case slug like 'deepinfra/fp8' (got {tag!r})")
    quant = e.get("quantization", "unknown")
    if quant is not None and quant not in QUANTIZATIONS:
        raise FleetError(
            f"fleet: {where}.quantization must be one of {sorted(QUANTIZATIONS)} (got {quant!r})"
        )
    params = e.get("supported_parameters", list(DEFAULT_SUPPORTED_PARAMETERS))
    if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
        raise FleetError(f"fleet: {where}.supported_parameters must be a list of strings (got {params!r})")
    status = v.integer(e, "status", where, 0)
    if status not in STATUSES:
        raise FleetError(f"fleet: {where}.status must be one of {sorted(STATUSES)} (got {status!r})")
    pricing = e.get("pricing", {})
    if not isinstance(pricing, Mapping):
        raise FleetError(f"fleet: {where}.pricing must be a table (got {pricing!r})")
    v.only_keys(pricing, {"prompt", "completion"}, f"{where}.pricing")
    faults = v.list_of_tables(e.get("faults", []), f"{where}.faults", required=False)
    if not isinstance(e.get("reports_cost", True), bool):
        raise FleetError(f"fleet: {where}.reports_cost must be true or false (got {e['reports_cost']!r})")
    return EndpointSpec(
        tag=tag,
        provider_name=v.string(e, "provider_name", where, required=True),
        quantization=quant,
        supported_parameters=tuple(params),
        prompt_price=v.price(pricing, "prompt", f"{where}.pricing", "0.0000002"),
        completion_price=v.price(pricing, "completion", f"{where}.pricing", "0.0000006"),
        context_length=v.integer(e, "context_length", where, 131072),
        max_completion_tokens=v.opt_integer(e, "max_completion_tokens", where),
        status=status,
        uptime_last_30m=v.uptime(e, "uptime_last_30m", where, 99.8),
        uptime_last_5m=v.uptime(e, "uptime_last_5m", where, 99.9),
        uptime_last_1d=v.uptime(e, "uptime_last_1d", where, 99.7),
        latency_last_30m=v.percentiles(e, "latency_last_30m", where),
        throughput_last_30m=v.percentiles(e, "throughput_last_30m", where),
        ttft_s=v.seconds(e, "ttft_s", where, 0.05),
        chunk_interval_s=v.seconds(e, "chunk_interval_s", where, 0.005),
        system_fingerprint=v.string(e, "system_fingerprint", where) or None,
        faults=tuple(_fault(f, f"{where}.faults[{i}]") for i, f in enumerate(faults)),
        reports_cost=e.get("reports_cost", True),
    )


def _fault(f: Mapping[str, Any], where: str) -> Fault:
    kind = f.get("kind")
    if kind not in FAULT_KINDS:
        raise FleetError(f"fleet: {where}.kind must be one of {sorted(FAULT_KINDS)} (got {kind!r})")
    spec = FAULT_KINDS[kind]
    rate = f.get("rate", 1.0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
        raise FleetError(f"fleet: {where}.rate must be a number between 0 and 1 (got {rate!r})")
    applies_to = f.get("applies_to", spec.applies_to)
    if applies_to not in REQUEST_KINDS:
        raise FleetError(
            f"fleet: {where}.applies_to must be one of {sorted(REQUEST_KINDS)} (got {applies_to!r})"
        )
    windows = tuple(
        _window(w, f"{where}.windows[{i}]")
        for i, w in enumerate(v.list_of_tables(f.get("windows", []), f"{where}.windows", required=False))
    )
    params: dict[str, Any] = {}
    for key, value in f.items():
        if key in {"kind", "rate", "applies_to", "windows"}:
            continue
        if key not in spec.params:
            allowed = ", ".join(sorted(spec.params)) or "none"
            raise FleetError(
                f"fleet: {where}: unknown parameter {key!r} for kind {kind!r} (allowed: {allowed})"
            )
        problem = spec.params[key].check(value)
        if problem:
            raise FleetError(f"fleet: {where}.{key} {problem} (got {value!r})")
        params[key] = value
    for key, param in spec.params.items():
        params.setdefault(key, param.default)
    return Fault(kind=kind, rate=float(rate), applies_to=applies_to, params=params, windows=windows)


def _window(w: Mapping[str, Any], where: str) -> Window:
    v.only_keys(w, {"start", "end", "hours"}, where)
    start, end = v.when(w, "start", where), v.when(w, "end", where)
    if start and end and end <= start:
        raise FleetError(f"fleet: {where}.end must be after start (got {w.get('end')!r})")
    hours = w.get("hours")
    span: tuple[int, int] | None = None
    if hours is not None:
        ok = (
            isinstance(hours, list)
            and len(hours) == 2
            and all(isinstance(h, int) and not isinstance(h, bool) and 0 <= h <= 24 for h in hours)
        )
        if not ok or hours[0] == hours[1]:
            raise FleetError(
                f"fleet: {where}.hours must be [from, to] UTC hours 0..24, from != to (got {hours!r})"
            )
        span = (hours[0], hours[1])
    return Window(start=start, end=end, hours=span)
