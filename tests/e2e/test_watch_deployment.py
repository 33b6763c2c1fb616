"""Served, the watcher looks without flow runs: a quiet look creates nothing in Prefect, and a suspicion creates
exactly one flow run, the Scheduled run of the cycle deployment that confirms it (like the rounds' own
confirmations), written on the suspicion rows, and one `canary.endpoint.suspected` event in the feed."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import start_simulator
from tasks import store
from tasks.config import CanaryConfig
from tasks.config.loading import apply_overrides
from tasks.core.types import Endpoint, Mode, RoundInfo
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.e2e

MODEL = "acme/watch-served"
QUIET = "acme/watch-quiet"
FLEET = {"models": [{"id": MODEL, "endpoints": [
    {"tag": "dipping", "provider_name": "Dipping", "faults": [{"kind": "uptime_dip", "uptime_5m": 30.0}]},
    {"tag": "steady", "provider_name": "Steady"},
]}, {"id": QUIET, "endpoints": [{"tag": t, "provider_name": t.title()} for t in ("alpha", "beta")]}]}


def _config(base_url: str, tmp: Path, model: str) -> CanaryConfig:
    cfg = apply_overrides(CanaryConfig(), {"base_url": base_url, "db_path": str(tmp / "c.duckdb"), "models": [model],
                                         "exclusions_file": NO_EXCLUSIONS, "publish_dir": str(tmp / "pub")})
    info = RoundInfo(f"{model}@full", model, datetime.now(UTC) - timedelta(minutes=5), Mode.OBSERVE)
    with store.open_store(cfg.db_path) as con:  # the model's first full round: the watcher waits for one
        tags = [e["tag"] for m in FLEET["models"] if m["id"] == model for e in m["endpoints"]]
        store.land_round(con, info, [], endpoints=[Endpoint(model, t, "") for t in tags], status="complete")
    return cfg


def _flow_runs() -> list[Any]:
    from prefect import get_client

    async def read() -> list[Any]:
        async with get_client() as client:
            return list(await client.read_flow_runs(limit=200))

    return asyncio.run(read())


def _suspected_events(since: datetime) -> list[dict[str, Any]]:
    from prefect.settings import get_current_settings

    from tests.support.prefect_runs import read_route_events

    return read_route_events(str(get_current_settings().api.url), "canary.endpoint.suspected", since)


def test_a_quiet_served_watcher_creates_no_flow_run(prefect_harness: None, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: `canary-watch` was a flow run every 30 s, 2,880 a day in the UI of a quiet system. Five looks of
    the served watcher at a healthy model: not one flow run, not one event."""
    from flows.cycle import canary_cycle
    from flows.watch import watch_engine
    from tasks.watch.loop import run_watcher

    canary_cycle.to_deployment(name="watch-test").apply()
    since = datetime.now(UTC)
    before = {r.id for r in _flow_runs()}
    with start_simulator(parse_fleet(FLEET)) as sim:
        monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
        cfg = _config(sim.base_url, tmp_path, QUIET)
        looks = run_watcher(watch_engine("canary-cycle/watch-test", "canary.toml"), lambda: cfg,
                            stop=threading.Event(), interval=timedelta(seconds=0.2), ticks=5)
    assert looks == 5
    assert [r.name for r in _flow_runs() if r.id not in before] == []
    time.sleep(2)  # the events worker sends within a second or so: nothing may have been on its way
    assert _suspected_events(since - timedelta(minutes=1)) == []


def test_a_served_suspicion_is_exactly_one_scheduled_cycle_run_and_an_event(
        prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.client.schemas.objects import StateType

    from flows.cycle import canary_cycle
    from flows.watch import watch_once
    from tests.support.prefect_runs import take_scheduled_run

    canary_cycle.to_deployment(name="watch-test").apply()
    before = {r.id for r in _flow_runs()}
    with start_simulator(parse_fleet(FLEET)) as sim:
        monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
        cfg = _config(sim.base_url, tmp_path, MODEL)
        now = datetime.now(UTC).replace(microsecond=0)
        [entry] = watch_once(cfg, now, "canary-cycle/watch-test", "canary.toml")
    run_id = entry["confirmation"]["flow_run_id"]
    assert [str(r.id) for r in _flow_runs() if r.id not in before] == [run_id]  # exactly the confirmation run

    run = take_scheduled_run(run_id)
    assert run.state is not None and run.state.type is StateType.SCHEDULED
    assert run.expected_start_time is not None and abs(run.expected_start_time - now) < timedelta(seconds=1)
    assert run.parameters["model"] == MODEL and run.parameters["only"] == ["dipping"]
    assert run.parameters["config_path"] == "canary.toml"
    assert run.parameters["confirms"].startswith("suspicion:dipping@")
    assert "suspicion" in run.tags and run.name.startswith("canary-confirm-acme-watch-served-")
    with store.open_store(cfg.db_path, read_only=True) as con:
        assert con.execute("SELECT tag, status, note FROM suspicions").fetchall() == [
            ("dipping", "scheduled", f"flow run {run_id}")]
    deadline = time.monotonic() + 30
    while not (events := _suspected_events(now - timedelta(minutes=1))) and time.monotonic() < deadline:
        time.sleep(0.5)
    [event] = [e for e in events if e["resource"]["prefect.resource.id"] == f"canary.endpoint.{MODEL}.dipping"]
    assert event["payload"]["signal"] == "uptime_drop" and event["payload"]["flow_run_id"] == run_id
    assert event["payload"]["status"] == "scheduled" and "uptime_last_5m (30.0 %)" in event["payload"]["evidence"]
