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
from tests.support.suspicion_cases import EPS, NOW, RULES, M, count, run

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


def test_the_quality_tally_whole_own_and_peers() -> None:
    from tasks.core.live_tally import QualityTally, quality_tally

    def row(tag: str, outcome: LiveOutcome, n: int, reason: str | None = None, ago: float = 60,
            quality: LiveQuality | None = LiveQuality.TOOLS) -> LiveCount:
        return LiveCount((NOW - timedelta(seconds=ago)).replace(second=0), M, "model:chat", 1, tag, None, outcome,
                         n, quality, reason)

    counts = [row("alpha", LiveOutcome.CUT_STREAM, 9, quality=None),  # an attempt row first: skipped
              row("alpha", LiveOutcome.HTTP_5XX, 7),  # a class with an outcome no judgement has: skipped
              row("alpha", LiveOutcome.OK, 6), row("alpha", LiveOutcome.QUALITY_FAIL, 3, "schema_violation"),
              row("alpha", LiveOutcome.QUALITY_FAIL, 1),  # no reason: counted as quality_fail
              row("alpha", LiveOutcome.QUALITY_FAIL, 5, "x", ago=200),  # before alpha's since: a peer's only
              row("alpha", LiveOutcome.QUALITY_FAIL, 4, "y", ago=-60),  # the minute after now: never
              row("beta", LiveOutcome.OK, 2), row("beta", LiveOutcome.QUALITY_FAIL, 1, "a"),
              row("beta", LiveOutcome.QUALITY_FAIL, 1, "b")]
    eps = [Endpoint(M, "alpha", "Alpha"), Endpoint(M, "beta", "Beta")]
    got = quality_tally(counts, eps, since={"alpha": NOW - timedelta(seconds=120)},
                        window_start=NOW - timedelta(seconds=300), until=NOW + timedelta(minutes=1))
    tools = LiveQuality.TOOLS
    assert got == {
        ("alpha", tools): QualityTally("alpha", tools, 10, 4, (("quality_fail", 1), ("schema_violation", 3)), 4, 2, 1),
        ("beta", tools): QualityTally("beta", tools, 4, 2, (("a", 1), ("b", 1)), 15, 9, 1)}


def test_quality_suspicions_at_their_thresholds_whole() -> None:
    from tasks.core.live_tally import QualityTally
    from tasks.core.suspicion import ClearedRate, quality_suspicion

    tools = LiveQuality.TOOLS
    at_rate = QualityTally("alpha", tools, 20, 10, (("schema_violation", 10),), 30, 0, 3)
    assert quality_suspicion(M, at_rate, None, RULES, NOW) is not None  # 50 % is the threshold itself
    one = SuspicionRules(window_s=300, min_requests=1, failure_rate=0.5, uptime_drop=20, cooldown_s=900)
    assert quality_suspicion(M, QualityTally("alpha", tools, 1, 1, (("no_call", 1),), 0, 0, 0), None, one,
                             NOW) is not None
    thirds = QualityTally("alpha", tools, 3, 2, (("bad_json_args", 1), ("no_call", 1)), 3, 1, 1)
    cleared = ClearedRate(NOW - timedelta(hours=2), 0.25)
    assert quality_suspicion(M, thirds, cleared, one, NOW) == Suspicion(
        M, "alpha", Signal.LIVE_QUALITY, NOW,
        "live tools answers failed 2/3 (67%) >= suspect_failure_rate 50% and >= 33% + suspect_peer_margin 0.3 "
        "(the peers' 33% (1/3 on 1 endpoints); the 25% the probes cleared at 2026-12-01T10:00:00Z) in 300 s "
        "(bad_json_args 1, no_call 1)", requests=3, failures=2, failure_rate=0.6667, quality=tools,
        reference_rate=0.3333)
