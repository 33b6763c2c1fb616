"""The watcher's loop (tasks/watch/loop.py) against the simulator and a real DuckDB file: a quiet look leaves no
trace, a suspicion is recorded, started and announced, and lasting conditions (no database yet, no full round
yet, the listing down, a broken config) are one log line each, not one per look; the metrics exporter waits for
the first database in one line too."""

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
from tasks.errors import ConfigError
from tasks.runtime.quiet_log import QuietLog
from tasks.watch.loop import WatchEngine, look_once, run_watcher, watch_interval
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration

MODEL = "acme/loop-model"
NOW = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
QUIET_FLEET = {"models": [{"id": MODEL, "endpoints": [
    {"tag": t, "provider_name": t.title()} for t in ("alpha", "beta", "gamma")]}]}
DIP_FLEET = {"models": [{"id": MODEL, "endpoints": [
    {"tag": "alpha", "provider_name": "Alpha", "faults": [{"kind": "uptime_dip", "uptime_5m": 40.0}]},
    {"tag": "beta", "provider_name": "Beta"}, {"tag": "gamma", "provider_name": "Gamma"}]}]}


@pytest.fixture(scope="module")
def quiet_sim() -> Iterator[SimulatorHandle]:
    with start_simulator(parse_fleet(QUIET_FLEET)) as handle:
        yield handle


@pytest.fixture(scope="module")
def dip_sim() -> Iterator[SimulatorHandle]:
    with start_simulator(parse_fleet(DIP_FLEET)) as handle:
        yield handle


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-simulator")


def config(base_url: str, tmp: Path) -> CanaryConfig:
    return apply_overrides(CanaryConfig(), {"base_url": base_url, "db_path": str(tmp / "canary.duckdb"),
                                          "publish_dir": str(tmp / "published"), "models": [MODEL],
                                          "exclusions_file": NO_EXCLUSIONS})


def land_full_round(cfg: CanaryConfig) -> None:
    info = RoundInfo(f"{MODEL}@full", MODEL, NOW - timedelta(minutes=5), Mode.OBSERVE)
    with store.open_store(cfg.db_path) as con:
        store.land_round(con, info, [], endpoints=[Endpoint(MODEL, t, t.title()) for t in ("alpha", "beta", "gamma")],
                         status="complete")


class Recorder:
    """The engine's two outward hands, kept: the rounds it was asked to start and the events it announced."""

    def __init__(self, fail: bool = False) -> None:
        self.started: list[ConfirmationRequest] = []
        self.events: list[CanaryEvent] = []
        self.fail = fail

    def start_round(self, cfg: CanaryConfig, request: ConfirmationRequest) -> str:
        if self.fail:
            raise RuntimeError("deployment canary-cycle/canary-cycle not found")
        self.started.append(request)
        return f"run-{len(self.started)}"

    def announce(self, events: Sequence[CanaryEvent]) -> int:
        self.events.extend(events)
        return len(events)

    def engine(self) -> WatchEngine:
        return WatchEngine(start_round=self.start_round, announce=self.announce)


def loop(engine: WatchEngine, cfg: CanaryConfig | None, ticks: int, quiet: QuietLog, load: object = None) -> int:
    return run_watcher(engine, load or (lambda: cfg), stop=threading.Event(), interval=timedelta(0),  # type: ignore[arg-type]
                       ticks=ticks, now=lambda: NOW, quiet=quiet)


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "canary.watch"]


def test_a_quiet_look_leaves_no_trace(quiet_sim: SimulatorHandle, tmp_path: Path,
                                      caplog: pytest.LogCaptureFixture) -> None:
    """Five looks at a healthy model: no round started, no event, no log line, no suspicion row."""
    cfg = config(quiet_sim.base_url, tmp_path)
    land_full_round(cfg)
    seen = Recorder()
    caplog.set_level(logging.DEBUG, logger="canary.watch")
    assert loop(seen.engine(), cfg, 5, QuietLog(logging.getLogger("canary.watch"))) == 5
    assert (seen.started, seen.events, lines(caplog)) == ([], [], [])
    with store.open_store(cfg.db_path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM suspicions").fetchone() == (0,)


def test_a_suspicion_is_recorded_then_started_then_announced(dip_sim: SimulatorHandle, tmp_path: Path) -> None:
    cfg = config(dip_sim.base_url, tmp_path)
    land_full_round(cfg)
    seen = Recorder()
    [look] = look_once(seen.engine(), cfg, NOW)
    assert [r.only for r in seen.started] == [["alpha"]] and look.started == "run-1"
    [event] = seen.events
    assert event.event == "canary.endpoint.suspected"
    assert event.resource["prefect.resource.id"] == f"canary.endpoint.{MODEL}.alpha"
    assert (event.payload["signal"], event.payload["status"], event.payload["flow_run_id"]) == (
        "uptime_drop", "scheduled", "run-1")
    assert event.payload["confirms"] == seen.started[0].confirms
    with store.open_store(cfg.db_path, read_only=True) as con:
        assert con.execute("SELECT tag, status, note FROM suspicions").fetchall() == [
            ("alpha", "scheduled", "flow run run-1")]
    assert look.as_dict()["confirmation"]["flow_run_id"] == "run-1"


def test_a_round_that_cannot_start_leaves_its_suspicion_skipped(dip_sim: SimulatorHandle, tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    cfg = config(dip_sim.base_url, tmp_path)
    land_full_round(cfg)
    seen = Recorder(fail=True)
    [look] = look_once(seen.engine(), cfg, NOW)
    assert look.started is None and [e.payload["status"] for e in seen.events] == ["skipped"]
    with store.open_store(cfg.db_path, read_only=True) as con:
        assert con.execute("SELECT status, note FROM suspicions").fetchall() == [
            ("skipped", "could not start the round: RuntimeError: deployment canary-cycle/canary-cycle not found")]
    assert any("could not start the round" in line for line in lines(caplog))


def test_waiting_for_the_database_and_the_first_full_round_is_one_line_each(
        dip_sim: SimulatorHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 30: "no database yet" every 5 s until the first round. The watcher says it once, creates nothing
    (a look would create the database), then says once that it waits for the model's first full round, and
    starts no round for the dip meanwhile."""
    cfg = config(dip_sim.base_url, tmp_path)
    quiet = QuietLog(logging.getLogger("canary.watch"))
    seen = Recorder()
    caplog.set_level(logging.INFO, logger="canary.watch")
    assert loop(seen.engine(), cfg, 4, quiet) == 0
    assert lines(caplog) == [f"watch: waiting for the first database at {cfg.db_path} (the first round creates "
                             "it); no look until then"]
    assert not Path(cfg.db_path).exists()
    caplog.clear()
    with store.open_store(cfg.db_path):  # the first round's window creates the file, before it lands the round
        pass
    assert loop(seen.engine(), cfg, 4, quiet) == 4
    assert lines(caplog) == [
        f"watch: the database at {cfg.db_path} is there; looking every {watch_interval(cfg).total_seconds():g} s",
        f"watch: no complete full round of {MODEL} yet: no suspicion-driven round before the first full round"]
    assert seen.started == [] and seen.events == []
    caplog.clear()
    land_full_round(cfg)
    assert loop(seen.engine(), cfg, 2, quiet) == 2
    assert [r.only for r in seen.started] == [["alpha"]]


def test_the_listing_down_is_one_line_and_the_live_signals_go_on(tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/api/v1"
    cfg = config(dead, tmp_path)
    land_full_round(cfg)
    caplog.set_level(logging.INFO, logger="canary.watch")
    looks = loop(Recorder().engine(), cfg, 4, QuietLog(logging.getLogger("canary.watch")))
    assert looks == 4
    said = lines(caplog)
    assert len(said) == 1 and said[0].startswith(f"watch: no listing for {MODEL} (discovery: cannot reach ")
    assert said[0].endswith("; live traffic only")


def test_a_broken_config_edit_is_one_line_and_the_last_good_config_goes_on(
        quiet_sim: SimulatorHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = config(quiet_sim.base_url, tmp_path)
    land_full_round(cfg)
    reads = iter([cfg, *[ConfigError("config: canary.toml is not valid TOML (x)")] * 3, cfg])

    def load() -> CanaryConfig:
        got = next(reads)
        if isinstance(got, Exception):
            raise got
        return got

    caplog.set_level(logging.INFO, logger="canary.watch")
    assert loop(Recorder().engine(), None, 5, QuietLog(logging.getLogger("canary.watch")), load) == 5
    assert lines(caplog) == ["watch: config: canary.toml is not valid TOML (x); looking with the config read before",
                             "watch: the config reads again"]


def test_the_metrics_exporter_waits_for_the_first_database_in_one_line(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """`canary serve --metrics-port` refreshes every 5 s: before the first round, one line, not one a refresh."""
    from tasks.metrics.exporter import CanaryCollector

    db = tmp_path / "canary.duckdb"
    collector = CanaryCollector([db], CanaryConfig(db_path=str(db)))
    caplog.set_level(logging.INFO, logger="tasks.metrics.exporter")
    for _ in range(4):
        assert b"\ncanary_snapshot_up 0.0\n" in b"".join(collector.scrape())
    said = [r.getMessage() for r in caplog.records if r.name == "tasks.metrics.exporter"]
    assert said == [f"metrics: store: no database at {db} yet; run a round first"]


def test_live_counts_from_prometheus_go_to_the_same_rules(quiet_sim: SimulatorHandle, tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """`live_source = "prometheus"`: the engine's reader gives every model's counts once a look (no database
    read); Prometheus holding no router's counters is one line while it lasts, and one when it ends."""
    from dataclasses import replace

    from tasks.core.live_records import LiveCount, LiveOutcome
    from tasks.watch.live_prometheus import LiveEvidence

    cfg = replace(config(quiet_sim.base_url, tmp_path), live_source="prometheus", prometheus_url="http://prom:9090")
    land_full_round(cfg)
    failing = [LiveCount(NOW, MODEL, "*", 0, "beta", None, LiveOutcome.UPSTREAM_ERROR, 25)]
    answers = iter([LiveEvidence({MODEL: []}, 0), LiveEvidence({MODEL: []}, 0), LiveEvidence({MODEL: failing}, 3)])
    asked: list[datetime] = []

    def live(c: CanaryConfig, now: datetime) -> LiveEvidence:
        asked.append(now)
        return next(answers)

    seen = Recorder()
    engine = WatchEngine(start_round=seen.start_round, announce=seen.announce, live=live)
    caplog.set_level(logging.INFO, logger="canary.watch")
    assert loop(engine, cfg, 3, QuietLog(logging.getLogger("canary.watch"))) == 3
    assert asked == [NOW] * 3 and [r.only for r in seen.started] == [["beta"]]
    assert lines(caplog) == [
        "watch: Prometheus at http://prom:9090 holds no router's live counters (canary_router_live_attempts_total): "
        "is it scraping the routers? no live suspicion until it does",
        "watch: Prometheus at http://prom:9090 answers: live counts of 3 router replica(s)",
        "Suspicion acme/loop-model beta: live failures 25/25 (100%) >= suspect_failure_rate 50% in 300 s "
        "(upstream_error 25) (confirmation round now)"]


def test_a_prometheus_that_does_not_answer_is_one_line_and_the_uptime_goes_on(
        dip_sim: SimulatorHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import socket
    from dataclasses import replace

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    cfg = replace(config(dip_sim.base_url, tmp_path), live_source="prometheus", prometheus_url=dead)
    land_full_round(cfg)
    seen = Recorder()
    caplog.set_level(logging.INFO, logger="canary.watch")
    assert loop(seen.engine(), cfg, 3, QuietLog(logging.getLogger("canary.watch"))) == 3
    said = [line for line in lines(caplog) if not line.startswith("Suspicion")]
    assert said == [f"watch: Prometheus at {dead} does not answer (ConnectError); no live suspicion until it "
                    "answers (OpenRouter's uptime is still watched)"]
    assert [(e.payload["signal"], r.only) for e, r in zip(seen.events, seen.started, strict=True)] == [
        ("uptime_drop", ["alpha"])]
