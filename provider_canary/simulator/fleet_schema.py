"""The fleet file's schema (provider_canary/simulator/FLEET.md): listed `[[models]]` or a generated `[catalog]`, as
pydantic tables.

`FleetFile` validates listed models (unknown keys refused in every table; a fault's own parameters are checked
against its kind's `Param`s, provider_canary/simulator/faults.py) and builds the records of
provider_canary/simulator/fleet_records.py, whose defaults these tables read. `CatalogFile` validates a `[catalog]`
table (provider_canary/simulator/catalog.py `CatalogSpec`'s keys). provider_canary/simulator/fleet.py and
provider_canary/simulator/fleet_file.py turn the first error into today's one line (`fleet: <where> <why>`,
tasks/config/schema_lines.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    Strict,
    model_validator,
)

from provider_canary.simulator.faults import FAULT_KINDS, REQUEST_KINDS, Fault, Window
from provider_canary.simulator.fleet_records import QUANTIZATIONS, STATUSES, EndpointSpec, ModelSpec, Percentiles
from tasks.config.schema_lines import Say

_TABLE = ConfigDict(extra="forbid")
#: Every endpoint and model default (provider_canary/simulator/fleet_records.py).
E: dict[str, Any] = {f.name: f.default for f in fields(EndpointSpec)}
M: dict[str, Any] = {f.name: f.default for f in fields(ModelSpec)}
_TABLES = Say("must be a non-empty list of tables (got {value!r})")
_KIND = Say(f"must be one of {sorted(FAULT_KINDS)} (got {{value!r}})")
_APPLIES = Say(f"must be one of {sorted(REQUEST_KINDS)} (got {{value!r}})")
_QUANT = Say(f"must be one of {sorted(QUANTIZATIONS)} (got {{value!r}})")
_STATUS = Say(f"must be one of {sorted(STATUSES)} (got {{value!r}})", "an integer")


def _among(say: Say, choices: Any) -> Any:
    def check(value: Any) -> Any:
        if value is not None and value not in choices:
            raise say.refuse(value)
        return value
    return check


def _none_is_empty(value: Any) -> Any:
    return [] if value is None else value


def _slug(tag: str) -> str:
    if tag != tag.lower() or tag.startswith("/") or tag.endswith("/") or " " in tag:
        raise ValueError(f"must be a lower-case slug like 'deepinfra/fp8' (got {tag!r})")
    return tag


def _author_slug(model_id: str) -> str:
    if "/" not in model_id:
        raise ValueError(f"must look like 'author/slug' (got {model_id!r})")
    return model_id


def _price(value: Any) -> str:
    try:
        ok = isinstance(value, str) and float(value) >= 0
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"must be a decimal string of USD per token (got {value!r})")
    return str(value)


def _when(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"must be an ISO-8601 time (got {value!r})") from None
    if not isinstance(value, datetime):
        raise ValueError(f"must be a date-time (got {value!r})")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _hours(hours: Any) -> tuple[int, int] | None:
    if hours is None:
        return None
    ok = isinstance(hours, list) and len(hours) == 2 and all(
        isinstance(h, int) and not isinstance(h, bool) and 0 <= h <= 24 for h in hours)
    if not ok or hours[0] == hours[1]:
        raise ValueError(f"must be [from, to] UTC hours 0..24, from != to (got {hours!r})")
    return (hours[0], hours[1])


def _percentiles(value: Any) -> Percentiles | None:
    if value is None:
        return None
    if (not isinstance(value, Mapping) or set(value) != {"p50", "p75", "p90", "p99"}
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value.values())):
        raise ValueError(f"must be a table with numbers p50, p75, p90, p99 (got {value!r})")
    return Percentiles(*(float(value[k]) for k in ("p50", "p75", "p90", "p99")))


Text = Annotated[str, Strict(), Field(pattern=r"\S"), Say("must be a non-empty string (got {value!r})")]
Optional = Annotated[Annotated[str, Strict(), Field(pattern=r"\S")] | None,
                     Say("must be a non-empty string (got {value!r})")]
Int = Annotated[int, Strict(), Say(what="an integer")]
Seconds = Annotated[float, Strict(), Field(ge=0), Say("must be a number of seconds >= 0 (got {value!r})")]
Uptime = Annotated[Annotated[float, Strict(), Field(ge=0, le=100)] | None,
                   Say("must be a percentage 0..100 (got {value!r})")]
Price = Annotated[str, PlainValidator(_price)]
Figures = Annotated[Percentiles | None, PlainValidator(_percentiles)]
Share = Annotated[float, Strict(), Field(ge=0, le=1), Say("must be a number between 0 and 1 (got {value!r})")]


class WindowTable(BaseModel):
    model_config = _TABLE
    start: Annotated[datetime | None, PlainValidator(_when)] = None
    end: Annotated[datetime | None, PlainValidator(_when)] = None
    hours: Annotated[tuple[int, int] | None, PlainValidator(_hours)] = None

    @model_validator(mode="wrap")
    @classmethod
    def _ends_after_start(cls, raw: Any, handler: Any) -> WindowTable:
        w: WindowTable = handler(raw)
        if w.start and w.end and w.end <= w.start:
            raise ValueError(f".end must be after start (got {raw.get('end')!r})")
        return w

    def window(self) -> Window:
        return Window(start=self.start, end=self.end, hours=self.hours)


class FaultTable(BaseModel):
    """A fault: its kind, rate, the requests it applies to, its windows, and its kind's own parameters."""

    model_config = ConfigDict(extra="allow")
    kind: Annotated[str, Strict(), AfterValidator(_among(_KIND, FAULT_KINDS)), _KIND]
    rate: Share = 1.0
    applies_to: Annotated[str, Strict(), AfterValidator(_among(_APPLIES, REQUEST_KINDS)), _APPLIES] = (
        None)  # type: ignore[assignment]  # None: the kind's own
    windows: Annotated[tuple[WindowTable, ...], BeforeValidator(_none_is_empty), _TABLES] = ()

    @model_validator(mode="after")
    def _own_parameters(self) -> FaultTable:
        spec = FAULT_KINDS[self.kind]
        for key, value in (self.model_extra or {}).items():
            if key not in spec.params:
                allowed = ", ".join(sorted(spec.params)) or "none"
                raise ValueError(f": unknown parameter {key!r} for kind {self.kind!r} (allowed: {allowed})")
            problem = spec.params[key].check(value)
            if problem:
                raise ValueError(f".{key} {problem} (got {value!r})")
        return self

    def fault(self) -> Fault:
        spec = FAULT_KINDS[self.kind]
        params = dict(self.model_extra or {})
        for key, param in spec.params.items():
            params.setdefault(key, param.default)
        return Fault(kind=self.kind, rate=self.rate, applies_to=self.applies_to or spec.applies_to, params=params,
                     windows=tuple(w.window() for w in self.windows))


class PricingTable(BaseModel):
    model_config = _TABLE
    prompt: Price = E["prompt_price"]
    completion: Price = E["completion_price"]


class EndpointTable(BaseModel):
    """One provider route of a model, as `/endpoints` lists it, plus how it misbehaves."""

    model_config = _TABLE
    tag: Annotated[Text, AfterValidator(_slug)]
    provider_name: Text
    quantization: Annotated[Annotated[str, Strict()] | None, AfterValidator(_among(_QUANT, QUANTIZATIONS)), _QUANT] = (
        E["quantization"])
    supported_parameters: Annotated[tuple[Annotated[str, Strict()], ...], Say(what="a list of strings")] = (
        E["supported_parameters"])
    pricing: PricingTable = Field(default_factory=PricingTable)
    context_length: Int = E["context_length"]
    max_completion_tokens: Annotated[Annotated[int, Strict()] | None, Say(what="an integer")] = None
    status: Annotated[int, Strict(), AfterValidator(_among(_STATUS, STATUSES)), _STATUS] = E["status"]
    uptime_last_30m: Uptime = E["uptime_last_30m"]
    uptime_last_5m: Uptime = E["uptime_last_5m"]
    uptime_last_1d: Uptime = E["uptime_last_1d"]
    latency_last_30m: Figures = None
    throughput_last_30m: Figures = None
    ttft_s: Seconds = E["ttft_s"]
    chunk_interval_s: Seconds = E["chunk_interval_s"]
    system_fingerprint: Optional = None
    faults: Annotated[tuple[FaultTable, ...], BeforeValidator(_none_is_empty), _TABLES] = ()
    reports_cost: Annotated[bool, Strict(), Say("must be true or false (got {value!r})")] = E["reports_cost"]

    def endpoint(self) -> EndpointSpec:
        values = dict(self.__dict__)  # the validated fields (faster than one getattr each: a catalog has thousands)
        pricing, faults = values.pop("pricing"), values.pop("faults")
        return EndpointSpec(**values, prompt_price=pricing.prompt, completion_price=pricing.completion,
                            faults=tuple(f.fault() for f in faults))


def _first_twin(values: list[str]) -> str | None:
    """The first by name of the values that are there twice."""
    return min((v for v in values if values.count(v) > 1), default=None)


class ModelTable(BaseModel):
    model_config = _TABLE
    id: Annotated[Text, AfterValidator(_author_slug)]
    name: Optional = None
    permaslug: Optional = None
    description: Optional = None
    created: Int = M["created"]
    context_length: Int = M["context_length"]
    endpoints: Annotated[list[EndpointTable], Field(min_length=1), _TABLES]

    @model_validator(mode="after")
    def _one_tag_each(self) -> ModelTable:
        if (twice := _first_twin([e.tag for e in self.endpoints])) is not None:
            raise ValueError(f".endpoints: duplicate tag {twice!r}")
        return self

    def model(self) -> ModelSpec:
        return ModelSpec(id=self.id, name=self.name or self.id, permaslug=self.permaslug or self.id,
                         description=self.description or "", created=self.created,
                         context_length=self.context_length, endpoints=tuple(e.endpoint() for e in self.endpoints))


class FleetFile(BaseModel):
    """Listed models: ids unique, and one display name per provider slug across them."""

    model_config = _TABLE
    models: Annotated[list[ModelTable], Field(min_length=1), _TABLES]

    @model_validator(mode="after")
    def _one_id_and_name_each(self) -> FleetFile:
        if (twice := _first_twin([m.id for m in self.models])) is not None:
            raise ValueError(f"models: duplicate model id {twice!r}")
        names: dict[str, str] = {}
        for e in (e for m in self.models for e in m.endpoints):
            slug = e.tag.split("/", 1)[0]
            seen = names.setdefault(slug, e.provider_name)
            if seen != e.provider_name:
                raise ValueError(f"provider slug {slug!r} has two display names ({seen!r}, {e.provider_name!r})")
        return self


Count = Annotated[int, Strict(), Say("must be an integer >= {ge} (got {value!r})")]
Delay = Annotated[float, Strict(), Field(ge=0), Say("must be a number of seconds >= 0 (got {value!r})")]
Fraction = Annotated[float, Strict(), Field(ge=0, le=1), Say("must be a number between 0 and 1 (got {value!r})")]


def _keepalive(value: float) -> float:
    if value == 0:
        raise ValueError("must be > 0 (got 0)")
    return value


class CatalogTable(BaseModel):
    """`[catalog]`: a generated catalog (provider_canary/simulator/catalog.py `CatalogSpec`; unset keys keep its
    defaults)."""

    model_config = _TABLE
    models: Annotated[Count, Field(ge=1)] = 0
    endpoints: Annotated[Count, Field(ge=1)] = 0
    seed: Annotated[Count, Field(ge=0)] = 0
    faulty_share: Fraction = 0
    slow_start_share: Fraction = 0
    jitter: Fraction = 0
    slow_start_s: Delay = 0
    keepalive_s: Annotated[Delay, AfterValidator(_keepalive)] = 0
    base_delay_s: Delay = 0
    chunk_interval_s: Delay = 0

    def given(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The keys the table set, as written (CatalogSpec's defaults stand for the rest)."""
        return {k: raw[k] for k in self.model_fields_set}


class CatalogFile(BaseModel):
    model_config = _TABLE
    catalog: CatalogTable
