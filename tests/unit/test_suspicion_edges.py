"""Edges of the live suspicion rules (tasks/core/suspicion.py) that test_suspicion.py stays clear of: the whole
suspicion a live failure rate raises (several outcomes in its evidence), a cooldown ending to the second, a
minimum of one request, a count stamped this very minute, and the rules read from the config."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tasks.config import CanaryConfig
from tasks.core.live_records import LiveCount, LiveOutcome
from tasks.core.suspicion import Signal, Suspicion, SuspicionRules, rules_of
from tests.unit.test_suspicion import EPS, NOW, RULES, M, count, run

pytestmark = pytest.mark.unit


def test_a_live_suspicion_whole_with_each_failing_outcome_in_its_evidence() -> None:
    [s] = run([count(LiveOutcome.OK, 8), count(LiveOutcome.CUT_STREAM, 5), count(LiveOutcome.HTTP_5XX, 7)])
    assert s == Suspicion(M, "alpha", Signal.LIVE_FAILURE_RATE, NOW,
                          "live failures 12/20 (60%) >= suspect_failure_rate 50% in 300 s (cut_stream 5, http_5xx 7)",
                          requests=20, failures=12, failure_rate=0.6)


def test_the_cooldown_ends_to_the_second() -> None:
    bad = [count(LiveOutcome.CUT_STREAM, 40, ago_s=30)]
    assert run(bad, last_suspected={"alpha": NOW - timedelta(seconds=899)}) == []
    assert [s.tag for s in run(bad, last_suspected={"alpha": NOW - timedelta(seconds=900)})] == ["alpha"]


def test_one_request_is_enough_when_the_minimum_is_one() -> None:
    one = SuspicionRules(window_s=300, min_requests=1, failure_rate=0.5, uptime_drop=20, cooldown_s=900)
    assert [s.requests for s in run([count(LiveOutcome.CUT_STREAM, 1)], rules=one)] == [1]


def test_a_count_stamped_this_minute_counts() -> None:
    now_minute = LiveCount(NOW.replace(second=0) + timedelta(seconds=59), M, "model:chat", 1, "alpha", None,
                           LiveOutcome.CUT_STREAM, 40)
    assert [s.tag for s in run([now_minute], endpoints=EPS)] == ["alpha"]


def test_the_rules_are_the_configs() -> None:
    cfg = CanaryConfig(models=(M,), suspect_window_s=120, suspect_min_requests=7, suspect_failure_rate=0.25,
                       suspect_uptime_drop=15, suspect_cooldown_s=600, suspect_peer_margin=0.2)
    assert rules_of(cfg) == SuspicionRules(120, 7, 0.25, 15, 600, 0.2)
    assert RULES.cooldown_s == 900
