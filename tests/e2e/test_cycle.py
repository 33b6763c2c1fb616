"""`canary-cycle`: every configured model's round in one process, one named round run per model.

Three models of three endpoints each (one broken per model) on the loopback simulator. One cycle runs all
three rounds as subflow runs of the cycle; each model's policy is its own (two cycles suspend each model's
broken endpoint).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.fleet import Fleet, parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.rounds import GENEROUS_TTFT_S, round_overrides

pytestmark = pytest.mark.e2e

MODELS = ["acme/cycle-a", "acme/cycle-b", "acme/cycle-c"]
T0 = datetime(2026, 8, 1, 8, 0, tzinfo=UTC)
DELAY = {"kind": "slow_first_token", "delay_s": 2.0, "keepalive_s": 0.5}  # every reply takes 2 s


def fleet() -> Fleet:
    models: list[dict[str, Any]] = []
    for m in MODELS:
        endpoints: list[dict[str, Any]] = [{"tag": t, "provider_name": t.capitalize(), "faults": [DELAY]}
                                           for t in ("alpha", "beta")]
        endpoints.append({"tag": "broken", "provider_name": "Broken", "faults": [{"kind": "invalid_json"}]})
        models.append({"id": m, "endpoints": endpoints})
    return parse_fleet({"models": models})


@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(fleet()) as handle:
        yield handle


def test_a_cycle_runs_every_model_concurrently_as_named_round_runs(
    prefect_harness: None, sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    from flows.cycle import canary_cycle

    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    ov = round_overrides(sim, tmp_path, MODELS[0], models=MODELS, ttft_s=GENEROUS_TTFT_S, languages=["en"], min_hosts=1,
                         concurrency=64, models_in_flight=3)
    first = canary_cycle(cycle_ts=T0, overrides=ov)
    second = canary_cycle(cycle_ts=T0 + timedelta(minutes=30), overrides=ov)
    assert first["status"] == second["status"] == "complete"
    assert sorted(r["model"] for r in first["rounds"]) == MODELS
    assert all(r["status"] == "complete" for r in first["rounds"] + second["rounds"])
    assert all(r["decisions"] == ["suspend:broken"] for r in second["rounds"]), second["rounds"]

    # That the rounds overlap in time is checked against a real `prefect server start` in test_serve.py: the
    # test harness runs its API server inside this process, which serialises subflow starts under load.
    with store.open_store(ov["db_path"], read_only=True) as con:
        rounds = con.execute("SELECT model, count(*) FROM rounds WHERE status = 'complete' GROUP BY 1 ORDER BY 1")
        assert rounds.fetchall() == [(m, 2) for m in MODELS]

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["canary-round"])), limit=200)
    names = {r.name for r in runs}
    for m in MODELS:
        assert f"canary-round-{m}-{T0:%Y-%m-%dT%H%M}" in names
