"""Issue 45's fleet for benchmarks/bench_catalog.py (`--fleet quarters`): the catalog's models and endpoints with
healthy endpoints only, then a quarter of the models carry each of four faults on `per_model` of their endpoints:

    models 0, 4, 8...   a 12 s slow start (`slow_first_token`, keep-alives every 2 s; fails ttft)
    models 1, 5, 9...   corrupted openings (`corrupted_opening`, every text reply)
    models 2, 6, 10...  invalid JSON (`invalid_json`, every structured reply)
    models 3, 7, 11...  a 429 with `Retry-After: 5` before the stream (`http_error_before_stream`)

Written as a `[[models]]` fleet file (provider_canary/simulator/FLEET.md), so the simulator and the figures
(`endpoint_role`) read it as any other. Which endpoints of a model carry its fault: the first `per_model` of its list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from provider_canary.simulator.catalog import CatalogSpec, catalog_models

QUARTER_FAULTS: tuple[Mapping[str, Any], ...] = (
    {"kind": "slow_first_token", "delay_s": 12.0, "keepalive_s": 2.0},
    {"kind": "corrupted_opening", "rate": 1.0},
    {"kind": "invalid_json"},
    {"kind": "http_error_before_stream", "status": 429, "retry_after_s": 5},
)


def quarter_models(spec: CatalogSpec, per_model: int) -> list[dict[str, Any]]:
    """The catalog of `spec` without its own faults, model m carrying QUARTER_FAULTS[m % 4] on `per_model`
    endpoints (the slow start's delay: `spec.slow_start_s`)."""
    models = catalog_models(replace(spec, faulty_share=0.0, slow_start_share=0.0))
    for m, model in enumerate(models):
        fault = dict(QUARTER_FAULTS[m % len(QUARTER_FAULTS)])
        if fault["kind"] == "slow_first_token":
            fault["delay_s"] = spec.slow_start_s
        for endpoint in model["endpoints"][:per_model]:
            endpoint["faults"] = [dict(fault)]
    return models


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string is a JSON string for what a fleet holds
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items() if x is not None) + " }"
    if isinstance(v, Sequence):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"no TOML for {v!r}")


def _table(header: str, table: Mapping[str, Any], arrays: Sequence[str] = ()) -> list[str]:
    lines = [header]
    lines += [f"{k} = {_value(v)}" for k, v in table.items() if v is not None and k not in arrays]
    return lines


def fleet_toml(models: Sequence[Mapping[str, Any]]) -> str:
    """A `[[models]]` fleet file of `models` (catalog_models' shape; None values left out)."""
    lines = ["# Issue 45's fleet (benchmarks/fault_fleet.py); format: provider_canary/simulator/FLEET.md"]
    for model in models:
        lines += _table("[[models]]", model, ("endpoints",))
        for endpoint in model["endpoints"]:
            lines += _table("[[models.endpoints]]", endpoint, ("faults",))
            for fault in endpoint.get("faults", ()):
                lines += _table("[[models.endpoints.faults]]", fault)
    return "\n".join(lines) + "\n"
