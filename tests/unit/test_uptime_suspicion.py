"""The listing's uptime signal (tasks/core/suspicion.py `uptime_suspicion`) whole: which figure it reads, the
baseline when the day's figure is missing, the drop at exactly the threshold, a threshold of 0 or 1, and the
evidence with and without the listing's status."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tasks.core.suspicion import Signal, Suspicion, SuspicionRules, uptime_suspicion
from tasks.core.types import Endpoint

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
M = "acme/m"


def rules(drop: float) -> SuspicionRules:
    return SuspicionRules(window_s=300, min_requests=20, failure_rate=0.5, uptime_drop=drop, cooldown_s=900)


def ep(**kw: object) -> Endpoint:
    return Endpoint(M, "alpha", "Alpha", **kw)  # type: ignore[arg-type]


def test_the_five_minute_figure_against_the_day_with_the_status() -> None:
    got = uptime_suspicion(ep(uptime_last_5m=70.0, uptime_last_30m=99.0, uptime_last_1d=90.0, status=-2),
                           rules(20), NOW)
    assert got == Suspicion(M, "alpha", Signal.UPTIME_DROP, NOW,
                            "OpenRouter uptime_last_5m (70.0 %) <= uptime_last_1d (90.0 %) - suspect_uptime_drop "
                            "(20); status -2", uptime_recent=70.0, uptime_baseline=90.0)


def test_the_thirty_minute_figure_against_a_full_day_when_the_others_are_missing() -> None:
    got = uptime_suspicion(ep(uptime_last_30m=79.5), rules(20), NOW)
    assert got == Suspicion(M, "alpha", Signal.UPTIME_DROP, NOW,
                            "OpenRouter uptime_last_30m (79.5 %) <= uptime_last_1d (100.0 %) - suspect_uptime_drop "
                            "(20)", uptime_recent=79.5, uptime_baseline=100.0)
    assert uptime_suspicion(ep(uptime_last_30m=80.5), rules(20), NOW) is None


def test_a_drop_of_exactly_the_threshold_is_one_and_a_threshold_of_0_is_off() -> None:
    assert uptime_suspicion(ep(uptime_last_5m=80.0, uptime_last_1d=100.0), rules(20), NOW) is not None
    assert uptime_suspicion(ep(uptime_last_5m=50.0, uptime_last_1d=100.0), rules(0), NOW) is None
    assert uptime_suspicion(ep(uptime_last_5m=98.0, uptime_last_1d=100.0), rules(1), NOW) is not None
    assert uptime_suspicion(ep(uptime_last_1d=100.0), rules(20), NOW) is None
