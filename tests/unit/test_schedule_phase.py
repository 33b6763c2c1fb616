"""Schedules keep their phase: every interval counts from one fixed instant (tasks/orchestration/deployments.py
SCHEDULE_ANCHOR), so a deployment built or deployed again later puts its runs at the same clock times.
tests/e2e/test_prefect_postgres.py redeploys prefect.yaml on a real server and reads the next run's time."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from tasks.config import CanaryConfig
from tasks.orchestration.deployments import SCHEDULE_ANCHOR

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def _next_runs(deployment: object, after: datetime, n: int = 3) -> list[datetime]:
    """The first `n` run times of the deployment's one schedule after `after`, as Prefect's server computes them
    (its scheduler service calls the same `get_dates`)."""
    import asyncio

    from prefect.server.schemas.schedules import IntervalSchedule

    [create] = deployment.schedules  # type: ignore[attr-defined]
    schedule = IntervalSchedule.model_validate(create.schedule.model_dump())
    return [d.astimezone(UTC) for d in asyncio.run(schedule.get_dates(n=n, start=after))]


def test_canary_serve_rebuilt_later_schedules_the_same_times() -> None:
    """`canary serve` builds its deployment at every start: two builds a moment apart give the same next rounds,
    on :00 and :30 for the default 30-minute interval."""
    from provider_canary.cli.serve_cmd import build_deployment

    cfg = CanaryConfig(models=("acme/m",))
    first = build_deployment(cfg, "canary.toml")
    time.sleep(1.1)  # Prefect's own default anchor is the build time: this second would show
    again = build_deployment(cfg, "canary.toml")
    after = datetime.now(UTC)
    runs = _next_runs(first, after)
    assert runs == _next_runs(again, after)
    assert all(r.minute in (0, 30) and r.second == 0 and r.microsecond == 0 for r in runs), runs
    assert runs[1] - runs[0] == timedelta(minutes=cfg.interval_min)


def test_an_interval_that_divides_no_hour_keeps_its_phase_too() -> None:
    from provider_canary.cli.serve_cmd import build_deployment

    cfg = CanaryConfig(models=("acme/m",), interval_min=7)
    after = datetime.now(UTC)
    runs = _next_runs(build_deployment(cfg, None), after)
    assert all((r - SCHEDULE_ANCHOR).total_seconds() % (7 * 60) == 0 for r in runs), runs


def test_prefect_yaml_anchors_its_schedules_where_canary_serve_does() -> None:
    spec = yaml.safe_load((REPO / "prefect.yaml").read_text(encoding="utf-8"))
    for dep in spec["deployments"]:
        for schedule in dep["schedules"]:
            assert datetime.fromisoformat(schedule["anchor_date"]) == SCHEDULE_ANCHOR, dep["name"]
            assert schedule["timezone"] == "UTC", dep["name"]
