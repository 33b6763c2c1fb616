"""Edges of the live suspicion rules (tasks/core/suspicion.py) that test_suspicion.py stays clear of: the whole
suspicion a live failure rate raises (several outcomes in its evidence), a cooldown ending to the second, a
minimum of one request, a count stamped this very minute, and the rules read from the config."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tasks.config import CanaryConfig
from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.core.suspicion import Signal, Suspicion, SuspicionRules, confirmation_request, rules_of
from tasks.core.types import Endpoint
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


def test_an_endpoint_skipped_for_its_cooldown_does_not_stop_the_next() -> None:
    bad = [count(LiveOutcome.CUT_STREAM, 40), count(LiveOutcome.CUT_STREAM, 40, tag="deepinfra/fp8")]
    found = run(bad, last_suspected={"alpha": NOW - timedelta(seconds=60)})
    assert [s.tag for s in found] == ["deepinfra/fp8"]


def test_a_judged_row_first_does_not_stop_the_attempts_after_it() -> None:
    judged = LiveCount(NOW - timedelta(minutes=1), M, "model:chat", 1, "alpha", None, LiveOutcome.OK, 5,
                       LiveQuality.TOOLS, "ok")
    old = count(LiveOutcome.CUT_STREAM, 40, ago_s=400)  # before the window: skipped
    assert [s.tag for s in run([judged, old, count(LiveOutcome.CUT_STREAM, 40)])] == ["alpha"]


def test_counts_of_a_minute_after_now_are_not_counted() -> None:
    future = LiveCount(NOW.replace(second=0) + timedelta(minutes=1), M, "model:chat", 1, "alpha", None,
                       LiveOutcome.CUT_STREAM, 40)
    assert run([future]) == []


def test_an_uptime_suspicion_from_suspect_is_stamped_now() -> None:
    [s] = run([], endpoints=[Endpoint(M, "alpha", "Alpha", uptime_last_5m=50.0, uptime_last_1d=99.0)])
    assert (s.signal, s.detected_at) == (Signal.UPTIME_DROP, NOW)


def test_a_confirmation_request_is_the_models() -> None:
    [s] = run([count(LiveOutcome.CUT_STREAM, 40)])
    request = confirmation_request(M, [s], ["alpha"], [], NOW)
    assert (request.model, request.confirms, request.due) == (M, "suspicion:alpha@2026-12-01T12:00:00Z", NOW)
