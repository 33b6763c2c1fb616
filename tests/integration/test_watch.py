"""The watcher's shell (tasks/watch.py) against the simulator's real endpoints listing and a real DuckDB file:
an uptime dip OpenRouter shows becomes a recorded suspicion and a confirmation request; it is not raised
again within the cooldown; over the budget it is recorded `skipped` and no round is asked for."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from simulator.fleet import parse_fleet
from simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.config import CanaryConfig
from tasks.config_loading import apply_overrides
from tasks.core.contracts import probed
from tasks.core.types import Attempt, Contract, Endpoint, Mode, RoundInfo, Usage
from tasks.watch import fetch_listing, watch_model

pytestmark = pytest.mark.integration

MODEL = "acme/watch-model"
NOW = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
FLEET = {"models": [{"id": MODEL, "endpoints": [
    {"tag": "dipping", "provider_name": "Dipping", "faults": [{"kind": "uptime_dip", "uptime_5m": 50.0}]},
    {"tag": "steady", "provider_name": "Steady"},
    {"tag": "quiet", "provider_name": "Quiet", "uptime_last_5m": None},
]}]}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(parse_fleet(FLEET)) as handle:
        yield handle


def config(sim: SimulatorHandle, tmp: Path, **extra: object) -> CanaryConfig:
    return apply_overrides(CanaryConfig(), {"base_url": sim.base_url, "db_path": str(tmp / "canary.duckdb"),
                                          "publish_dir": str(tmp / "published"), "models": [MODEL],
                                          "exclusions_file": str(tmp / "none.toml"), **extra})


def test_the_listing_carries_the_dip_and_the_nulls(sim: SimulatorHandle, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    listing = {e.tag: e for e in fetch_listing(config(sim, tmp_path), MODEL)}
    assert (listing["dipping"].uptime_last_5m, listing["dipping"].status) == (50.0, -2)
    assert listing["quiet"].uptime_last_5m is None and listing["steady"].uptime_last_5m == 99.9
    assert listing["steady"].latency_p50_ms == 620  # authenticated: latency figures are given


def test_an_uptime_dip_is_a_recorded_suspicion_and_a_confirmation_request(
        sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    cfg = config(sim, tmp_path, refusal_controls=["steady"])
    listing = fetch_listing(cfg, MODEL)
    result = watch_model(cfg, MODEL, NOW, listing)
    assert [(s.tag, str(s.signal)) for s in result.suspicions] == [("dipping", "uptime_drop")]
    assert result.request is not None and result.request.due == NOW
    assert dict(result.request.contracts) == {"dipping": probed(), "steady": (Contract.REFUSAL,)}
    again = watch_model(cfg, MODEL, NOW + timedelta(minutes=5), listing)  # within suspect_cooldown_s
    assert again.suspicions == () and again.request is None
    with store.open_store(cfg.db_path, read_only=True) as con:
        rows = con.execute("SELECT tag, signal, status, uptime_recent, uptime_baseline, evidence FROM suspicions"
                           ).fetchall()
    assert rows == [("dipping", "uptime_drop", "scheduled", 50.0, 99.7,
                     "OpenRouter uptime_last_5m (50.0 %) <= uptime_last_1d (99.7 %) - suspect_uptime_drop (20); "
                     "status -2")]


def test_over_the_budget_a_suspicion_is_recorded_skipped(sim: SimulatorHandle, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    cfg = config(sim, tmp_path, budget_usd_per_day=0.01)
    info = RoundInfo(f"{MODEL}@r1", MODEL, NOW - timedelta(minutes=20), Mode.OBSERVE)
    spent = [Attempt(round_id=info.round_id, model=MODEL, tag="steady", provider_name="Steady",
                     contract=Contract.TTFT, attempt_no=1, started_at=info.round_ts, usage=Usage(10, 10, 20, 0.5))]
    with store.open_store(cfg.db_path, snapshot=True) as con:  # the budget reads the analysts' snapshot
        store.land_round(con, info, spent, endpoints=[Endpoint(MODEL, "steady", "Steady")], status="complete")
    result = watch_model(cfg, MODEL, NOW, fetch_listing(cfg, MODEL))
    assert [s.tag for s in result.suspicions] == ["dipping"] and result.request is None
    assert result.skipped is not None and result.skipped.startswith("over budget")
    with store.open_store(cfg.db_path, read_only=True) as con:
        assert con.execute("SELECT status, note FROM suspicions").fetchall() == [("skipped", result.skipped)]
