"""Live evidence from a fleet, for real: two routers in front of the simulator, each exporting its counters
(provider_canary/router/live_metrics.py) and writing `live_requests` into its own database, a real Prometheus (Debian's
package) scraping both, and the watcher's reader (tasks/watch/live_prometheus.py) asking it.

* the records Prometheus gives, summed over both replicas, are the ones the two databases hold for the same
  requests (the same tags, providers, outcomes, classes, reasons and counts), so `suspect` cannot tell them apart;
* a look of the watcher with `live_source = "prometheus"` suspects the endpoint failing behind both routers;
* `canary status`'s line and the exporter's `canary_live_source_up` say how many replicas report.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from provider_canary.router.server import RunningRouter
from tasks import store
from tasks.config import CanaryConfig
from tasks.core.live_records import LiveCount
from tasks.core.types import Endpoint, Mode, RoundInfo
from tasks.metrics.exporter import CanaryCollector, exposition
from tasks.store.live import live_counts
from tasks.watch.live_prometheus import live_source_health, read_live_evidence
from tasks.watch.loop import WatchEngine, look_once
from tests.support import NO_EXCLUSIONS
from tests.support.live_fleet import FAULTS, MODEL, routers, simulator_for_fleet, traffic
from tests.support.prometheus import Prometheus, prometheus

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

Key = tuple[str | None, str | None, str, str | None, str | None]


@dataclass
class Fleet:
    prom: Prometheus
    running: list[RunningRouter]
    dirs: list[Path]
    before: Counter[Key]  # the databases' counts after the warm-up
    measured_from: float  # time.time() between the warm-up's last scrape and the measured requests
    sent: int


def _key(c: LiveCount) -> Key:
    """What a record says, whichever path built it: a pinned tier's provider is its tag's."""
    return (c.tag, None if c.tag else c.provider_name, str(c.outcome), str(c.quality) if c.quality else None,
            c.reason if c.quality else None)


def _tally(counts: Iterable[LiveCount]) -> Counter[Key]:
    out: Counter[Key] = Counter()
    for c in counts:
        out[_key(c)] += c.requests
    return out


def _databases(dirs: list[Path]) -> Counter[Key]:
    total: Counter[Key] = Counter()
    for d in dirs:
        with store.open_store(d / "events.duckdb", read_only=True) as con:
            total += _tally(live_counts(con, MODEL, datetime(2000, 1, 1, tzinfo=UTC)))
    return total


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    tmp = tmp_path_factory.mktemp("live-prometheus")
    dirs = [tmp / "a", tmp / "b"]
    with simulator_for_fleet() as sim, routers(sim, dirs) as running:
        targets = [r.base_url.removeprefix("http://").removesuffix("/v1") for r in running]
        with prometheus(tmp / "prom", targets, job="router", rules=False, every="250ms") as prom:
            assert prom.wait_for("count(count by (instance) (canary_router_live_attempts_total)) == 2")
            warm = traffic(running, rounds=1)  # series no router can start at 0 (a provider, a reason) are born
            time.sleep(1.5)  # ... and scraped: from here on every request is an increase Prometheus sees
            before, measured_from = _databases(dirs), time.time()
            time.sleep(1.0)  # a scrape or more before the measured requests
            sent = traffic(running, rounds=3)
            time.sleep(6)  # scrapes after the last request: `increase` extrapolates by < 2 % of the measured span
            yield Fleet(prom, running, dirs, before, measured_from, warm + sent)


def _cfg(fleet: Fleet, **kw: object) -> CanaryConfig:
    return replace(CanaryConfig(models=(MODEL,), live_source="prometheus", prometheus_url=fleet.prom.base_url), **kw)


def test_prometheus_sums_the_replicas_into_the_records_the_databases_hold(fleet: Fleet) -> None:
    now = datetime.now(UTC)
    window = math.ceil(now.timestamp() - fleet.measured_from)  # from the warm-up's last scrape: the measured requests
    evidence = read_live_evidence(_cfg(fleet, suspect_window_s=window), now)
    assert evidence.routers == 2
    measured = _databases(fleet.dirs) - fleet.before
    assert _tally(evidence.counts[MODEL]) == measured
    # every kind of count is in it: a failed-over masked failure, judged tool calls held and broken, an endpoint
    # known by its provider only
    assert measured[("alpha", None, "upstream_error", None, None)] == 6
    assert measured[("gamma", None, "quality_fail", "tools", "schema_violation")] == 6
    assert measured[(None, "Delta", "ok", None, None)] == 6


def test_a_look_with_live_source_prometheus_suspects_the_endpoint_failing_behind_both(fleet: Fleet,
                                                                                     tmp_path: Path) -> None:
    cfg = _cfg(fleet, db_path=str(tmp_path / "canary.duckdb"), publish_dir=str(tmp_path / "published"),
               exclusions_file=NO_EXCLUSIONS, suspect_window_s=60, suspect_min_requests=6)
    now = datetime.now(UTC)
    with store.open_store(cfg.db_path) as con:
        store.land_round(con, RoundInfo(f"{MODEL}@full", MODEL, now - timedelta(minutes=5), Mode.OBSERVE), [],
                         endpoints=[Endpoint(MODEL, t, t.title()) for t in FAULTS], status="complete")
    [look] = look_once(WatchEngine(listing=lambda c, m: []), cfg, now)
    assert [(s.tag, str(s.signal)) for s in look.result.suspicions] == [  # type: ignore[union-attr]
        ("alpha", "live_failure_rate"), ("gamma", "live_quality")]
    assert "live failures 8/8 (100%)" in look.result.suspicions[0].evidence  # type: ignore[union-attr]


def test_status_and_the_exporter_say_how_many_replicas_report(fleet: Fleet, tmp_path: Path) -> None:
    health = live_source_health(_cfg(fleet))
    assert (health.up, health.routers) == (True, 2)
    assert health.line() == f"live evidence: Prometheus at {fleet.prom.base_url}: 2 router replicas reporting"
    db = str(tmp_path / "none.duckdb")
    scrape = exposition(CanaryCollector([db], _cfg(fleet, db_path=db))).decode()
    assert "\ncanary_live_source_up 1.0\n" in scrape and "\ncanary_live_source_routers 2.0\n" in scrape
    with_db = exposition(CanaryCollector([db], CanaryConfig(db_path=db))).decode()
    assert "canary_live_source" not in with_db  # live_source = "db": nothing to ask
    nobody = exposition(CanaryCollector([db], _cfg(fleet, db_path=db, prometheus_url="http://127.0.0.1:9"))).decode()
    assert "\ncanary_live_source_up 0.0\n" in nobody and "\ncanary_live_source_routers 0.0\n" in nobody
