"""The watcher follows every shard it is given (tasks/watch/loop.py `Shard`, `canary watch --db A --db B`): each
database's own models (canary.toml, shared by the shards, lists none of them), each suspicion recorded in its own
file and confirmed through its shard's engine (its canary-cycle-<stem> deployment, on its file). The simulator and
real DuckDB files; the engines' outward hands recorded."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.config import CanaryConfig
from tasks.config.loading import apply_overrides
from tasks.core.canary_events import CanaryEvent
from tasks.core.confirm import ConfirmationRequest
from tasks.core.types import Endpoint, Mode, RoundInfo
from tasks.runtime.quiet_log import QuietLog
from tasks.watch.loop import Shard, WatchEngine, run_watcher
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
SHARDS = {"shard-a": "acme/shard-a-1", "shard-b": "acme/shard-b-1"}
FLEET = {"models": [{"id": m, "endpoints": [
    {"tag": "alpha", "provider_name": "Alpha", "faults": [{"kind": "uptime_dip", "uptime_5m": 40.0}]},
    {"tag": "beta", "provider_name": "Beta"}, {"tag": "gamma", "provider_name": "Gamma"}]} for m in SHARDS.values()]}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(parse_fleet(FLEET)) as handle:
        yield handle


class Recorder:
    def __init__(self) -> None:
        self.started: list[tuple[str, ConfirmationRequest]] = []

    def engine(self) -> WatchEngine:
        def start(cfg: CanaryConfig, request: ConfirmationRequest) -> str:
            self.started.append((cfg.db_path, request))
            return f"run-{len(self.started)}"

        def announce(events: Sequence[CanaryEvent]) -> int:
            return len(events)

        return WatchEngine(start_round=start, announce=announce)


def shard_file(tmp: Path, shard: str, model: str) -> str:
    db = str(tmp / f"{shard}.duckdb")
    with store.open_store(db) as con:  # the shard's first full round of its own model
        store.land_round(con, RoundInfo(f"{model}@full", model, NOW - timedelta(minutes=5), Mode.OBSERVE), [],
                         endpoints=[Endpoint(model, t, t.title()) for t in ("alpha", "beta", "gamma")],
                         status="complete")
    return db


def test_the_watcher_follows_each_shard_with_its_own_models_and_deployment(
    sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-simulator")
    cfg = apply_overrides(CanaryConfig(), {"base_url": sim.base_url, "db_path": str(tmp_path / "canary.duckdb"),
                                           "models": ["acme/unused"], "exclusions_file": NO_EXCLUSIONS})
    recorders = {s: Recorder() for s in SHARDS}
    dbs = {s: shard_file(tmp_path, s, m) for s, m in SHARDS.items()}
    shards = [Shard(dbs[s], recorders[s].engine()) for s in SHARDS]
    looks = run_watcher(WatchEngine(), lambda: cfg, stop=threading.Event(), interval=timedelta(0), ticks=1,
                        now=lambda: NOW, quiet=QuietLog(logging.getLogger("canary.watch")), shards=shards)
    assert looks == 2  # one look per shard
    for shard, model in SHARDS.items():
        [(db, request)] = recorders[shard].started  # through its own engine, on its own file
        assert db == dbs[shard] and (request.model, request.only) == (model, ["alpha"])
        with store.open_store(dbs[shard], read_only=True) as con:
            assert con.execute("SELECT model, tag FROM suspicions").fetchall() == [(model, "alpha")]
    assert not Path(cfg.db_path).exists()  # the config's own file is not a shard given: never created


def test_a_shard_is_confirmed_on_its_own_deployment_and_file() -> None:
    from flows.watch import shard_deployment, shards

    assert shard_deployment("/var/lib/canary/shard-a.duckdb") == "canary-cycle/canary-cycle-shard-a"
    assert shard_deployment("/var/lib/canary/canary.duckdb") == "canary-cycle/canary-cycle"
    [shard] = shards(["/var/lib/canary/shard-b.duckdb"], "canary.toml")
    start = shard.engine.start_round
    assert start is not None and start.keywords == {  # type: ignore[attr-defined]
        "deployment": "canary-cycle/canary-cycle-shard-b", "config_path": "canary.toml",
        "db_path": "/var/lib/canary/shard-b.duckdb"}
