"""The simulator's usage object: the listed pricing x tokens as `cost`, or no cost at all for an endpoint
with `reports_cost = false` (the canary then estimates its spend); the default fleet has both kinds."""

from __future__ import annotations

import pytest

from provider_canary.simulator import wire
from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.fleet_file import DEFAULT_FLEET_PATH, load_fleet
from tasks.errors import FleetError

pytestmark = pytest.mark.unit


def fleet(**endpoint: object) -> dict[str, object]:
    return {"models": [{"id": "m/x", "endpoints": [{"tag": "a", "provider_name": "A", **endpoint}]}]}


def test_usage_carries_the_listed_cost_or_none() -> None:
    pricing = {"prompt": "0.000001", "completion": "0.000002"}
    (billed,) = parse_fleet(fleet(pricing=pricing)).models[0].endpoints
    (silent,) = parse_fleet(fleet(pricing=pricing, reports_cost=False)).models[0].endpoints
    u = wire.usage(100, 50, billed)
    assert list(u)[:5] == ["prompt_tokens", "completion_tokens", "total_tokens", "cost", "is_byok"]
    assert u["cost"] == pytest.approx(100e-6 + 100e-6) and u["cost_details"]["upstream_inference_cost"] == u["cost"]
    s = wire.usage(100, 50, silent)
    assert list(s) == ["prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
                       "completion_tokens_details"]
    assert s["total_tokens"] == 150


def test_reports_cost_must_be_a_boolean() -> None:
    with pytest.raises(FleetError, match=r"reports_cost must be true or false \(got 'no'\)"):
        parse_fleet(fleet(reports_cost="no"))


def test_the_default_fleet_has_endpoints_of_both_kinds() -> None:
    endpoints = load_fleet(DEFAULT_FLEET_PATH).models[0].endpoints
    assert {e.tag for e in endpoints if not e.reports_cost} == {"together", "parasail/fp8"}
    assert sum(e.reports_cost for e in endpoints) == len(endpoints) - 2
