"""Served, the watcher schedules a suspicion's confirmation round as a run of the cycle deployment (like the
rounds' own confirmations), and writes that run on the suspicion rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from simulator.fleet import parse_fleet
from simulator.server import start_simulator
from tasks import store
from tasks.config import CanaryConfig
from tasks.config_loading import apply_overrides

pytestmark = pytest.mark.e2e

MODEL = "acme/watch-served"
FLEET = {"models": [{"id": MODEL, "endpoints": [
    {"tag": "dipping", "provider_name": "Dipping", "faults": [{"kind": "uptime_dip", "uptime_5m": 30.0}]},
    {"tag": "steady", "provider_name": "Steady"},
]}]}


def test_a_served_suspicion_is_a_scheduled_cycle_run(prefect_harness: None, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.client.schemas.objects import StateType

    from flows.cycle import canary_cycle
    from flows.watch import watch_once

    canary_cycle.to_deployment(name="watch-test").apply()
    with start_simulator(parse_fleet(FLEET)) as sim:
        monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
        cfg = apply_overrides(CanaryConfig(), {"base_url": sim.base_url, "db_path": str(tmp_path / "c.duckdb"),
                                             "models": [MODEL], "exclusions_file": str(tmp_path / "none.toml"),
                                             "publish_dir": str(tmp_path / "pub")})
        now = datetime.now(UTC).replace(microsecond=0)
        [entry] = watch_once(cfg, now, "canary-cycle/watch-test", "canary.toml")
    run_id = entry["confirmation"]["flow_run_id"]
    assert run_id

    from tests.support.prefect_runs import take_scheduled_run

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
