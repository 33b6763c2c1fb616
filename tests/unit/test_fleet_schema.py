"""The fleet file's schema (provider_canary/simulator/fleet_schema.py): every table's keys, and a value of a kind the
old parser never expected (a list where a word belongs) told in one line instead of a traceback."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from provider_canary.simulator.fleet import EndpointSpec, parse_fleet
from provider_canary.simulator.fleet_file import read_fleet
from provider_canary.simulator.fleet_schema import EndpointTable
from tasks.errors import FleetError

pytestmark = pytest.mark.unit


def fleet(endpoint: dict[str, Any]) -> dict[str, Any]:
    return {"models": [{"id": "a/b", "endpoints": [{"tag": "x", "provider_name": "X", **endpoint}]}]}


def told(raw: dict[str, Any]) -> str:
    with pytest.raises(FleetError) as info:
        parse_fleet(raw)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_the_endpoint_table_holds_every_field_with_the_records_default() -> None:
    own = {"pricing", "faults"}  # pricing.prompt/completion and the faults' tables
    assert set(EndpointTable.model_fields) - own == {f.name for f in fields(EndpointSpec)} - {
        "prompt_price", "completion_price", "faults"}
    (model,) = parse_fleet(fleet({})).models
    assert model.endpoints[0] == EndpointSpec(tag="x", provider_name="X")


@pytest.mark.parametrize(("endpoint", "line"), [
    ({"quantization": ["fp8"]}, "fleet: models[0].endpoints[0].quantization must be one of ['bf16', "),
    ({"faults": [{"kind": ["slow_first_token"]}]}, "fleet: models[0].endpoints[0].faults[0].kind must be one of "),
    ({"faults": [{"kind": "refusal", "applies_to": {"text": 1}}]},
     "fleet: models[0].endpoints[0].faults[0].applies_to must be one of ['all', "),
])
def test_an_unhashable_value_is_one_line_not_a_traceback(endpoint: dict[str, Any], line: str) -> None:
    assert told(fleet(endpoint)).startswith(line)


@pytest.mark.parametrize(("endpoint", "line"), [
    ({"pricing": 5}, "fleet: models[0].endpoints[0].pricing must be a table (got 5)"),
    ({"pricing": {"prompt": "1", "free": True}},
     "fleet: models[0].endpoints[0].pricing: unknown key 'free' (allowed: completion, prompt)"),
    ({"faults": [{"kind": "slow_first_token", "delay_s": -1}]},
     "fleet: models[0].endpoints[0].faults[0].delay_s must be >= 0 (got -1)"),  # the kind's own Param
    ({"faults": [{"kind": "refusal", "windows": [{"start": "2025-01-02", "end": "2025-01-01"}]}]},
     "fleet: models[0].endpoints[0].faults[0].windows[0].end must be after start (got '2025-01-01')"),
    ({"ttft_s": float("nan")}, "fleet: models[0].endpoints[0].ttft_s must be a number of seconds >= 0 (got nan)"),
])
def test_a_nested_value_is_named_where_it_sits(endpoint: dict[str, Any], line: str) -> None:
    assert told(fleet(endpoint)) == line


def test_a_catalog_table_is_told_in_todays_words() -> None:
    with pytest.raises(FleetError, match=r"^fleet: catalog.keepalive_s must be > 0 \(got 0\)$"):
        read_fleet({"catalog": {"keepalive_s": 0.0}})
    with pytest.raises(FleetError, match=r"^fleet: fleet: unknown key 'models' \(allowed: catalog\)$"):
        read_fleet({"catalog": {}, "models": []})
    assert read_fleet({"catalog": {"models": 2, "endpoints": 3, "slow_start_s": 3}}).source.startswith("catalog(2x3, ")
