"""Suspicion rules (tasks/core/suspicion.py): table cases and Hypothesis properties of the live attempts and uptime
signals (the live quality signal: test_suspicion_quality.py).

A suspicion only ever asks for a confirmation round: it never suspends by itself, below `min_requests` it never
triggers, 429s are never failures, and what the probes then say is read by `resolution`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.core.live_tally import tally
from tasks.core.policy import PolicyConfig, RoundInput, decide
from tasks.core.suspicion import (
    Signal,
    Suspicion,
    SuspicionRules,
    SuspicionStatus,
    resolution,
    uptime_suspicion,
)
from tasks.core.types import Endpoint, EndpointState, IgnoreList, Mode, RoundStatus
from tests.support.suspicion_cases import EPS, NOW, RULES, STATES, SUSPEND, M, count, run

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("counts", "expected"), [
    pytest.param([count(LiveOutcome.OK, 10), count(LiveOutcome.PROTOCOL_VIOLATION, 10)], ["alpha"],
                 id="half-failed-at-min-requests"),
    pytest.param([count(LiveOutcome.OK, 11), count(LiveOutcome.CUT_STREAM, 9)], [], id="below-the-rate"),
    pytest.param([count(LiveOutcome.FIRST_CHUNK_TIMEOUT, 19)], [], id="below-min-requests"),
    pytest.param([count(LiveOutcome.HTTP_429, 200), count(LiveOutcome.OK, 5)], [], id="429s-are-not-failures"),
    pytest.param([count(LiveOutcome.UPSTREAM_ERROR, 30, ago_s=400)], [], id="outside-the-window"),
    pytest.param([count(LiveOutcome.HTTP_5XX, 30, tag=None, provider="DeepInfra")],
                 ["deepinfra/fp8", "deepinfra/turbo"], id="provider-name-counts-for-each-of-its-tags"),
    pytest.param([count(LiveOutcome.HTTP_5XX, 30, tag=None, provider="Unknown")], [], id="unknown-provider"),
])
def test_live_failure_rate(counts: list[LiveCount], expected: list[str]) -> None:
    found = run(counts)
    assert [s.tag for s in found] == expected
    assert all(s.signal is Signal.LIVE_FAILURE_RATE for s in found)


def test_judged_answer_rows_are_not_attempts() -> None:
    """A row with a quality class counts judged answers of requests whose attempt row is already counted:
    however many failed their check, the attempt rate does not see them (no double count, no suspicion)."""
    judged = replace(count(LiveOutcome.QUALITY_FAIL, 40), quality=LiveQuality.TOOLS, reason="schema_violation")
    passed = replace(count(LiveOutcome.OK, 60), quality=LiveQuality.TOOLS, reason="ok")
    assert run([count(LiveOutcome.OK, 40), judged, passed]) == []  # 40/100 judged answers failed: below the rate
    assert [s.signal for s in run([judged])] == [Signal.LIVE_QUALITY]  # the quality signal's, not the attempts'


def test_the_evidence_names_the_signal_and_the_counts() -> None:
    [s] = run([count(LiveOutcome.OK, 8), count(LiveOutcome.PROTOCOL_VIOLATION, 12), count(LiveOutcome.HTTP_429, 5)])
    assert (s.requests, s.failures, s.failure_rate) == (20, 12, 0.6)
    assert s.evidence == ("live failures 12/20 (60%) >= suspect_failure_rate 50% in 300 s "
                          "(protocol_violation 12)")


def test_out_of_traffic_and_recently_suspected_endpoints_are_not_suspected() -> None:
    bad = [count(LiveOutcome.CUT_STREAM, 40)]
    suspended = {"alpha": EndpointState(M, "alpha", Mode.ENFORCE, suspended_until=NOW + timedelta(days=1))}
    assert run(bad, states=suspended) == []
    assert run(bad, ignore=IgnoreList(M, ("alpha",), ())) == []
    assert run(bad, last_suspected={"alpha": NOW - timedelta(seconds=600)}) == []
    assert [s.tag for s in run(bad, last_suspected={"alpha": NOW - timedelta(seconds=901)})] == ["alpha"]
    # without a cooldown, only requests after the previous suspicion count (its evidence is spent)
    no_cooldown = SuspicionRules(300, 20, 0.5, 20, 0)
    assert run([count(LiveOutcome.CUT_STREAM, 40, ago_s=240)], rules=no_cooldown,
               last_suspected={"alpha": NOW - timedelta(seconds=120)}) == []


@pytest.mark.parametrize(("e", "hit"), [
    pytest.param(Endpoint(M, "a", "A", uptime_last_5m=60.0, uptime_last_1d=99.5), True, id="sharp-drop"),
    pytest.param(Endpoint(M, "a", "A", uptime_last_5m=85.0, uptime_last_1d=99.5), False, id="wobble"),
    pytest.param(Endpoint(M, "a", "A", uptime_last_30m=70.0, uptime_last_1d=99.0), True, id="5m-null-uses-30m"),
    pytest.param(Endpoint(M, "a", "A", uptime_last_5m=70.0), True, id="1d-null-means-100"),
    pytest.param(Endpoint(M, "a", "A", uptime_last_1d=40.0), False, id="recent-null-never-triggers"),
    pytest.param(Endpoint(M, "a", "A", status=-2, uptime_last_5m=95.0, uptime_last_1d=99.0), False,
                 id="status-alone-never-triggers"),
])
def test_uptime_drop(e: Endpoint, hit: bool) -> None:
    s = uptime_suspicion(e, RULES, NOW)
    assert (s is not None) is hit
    if s is not None:
        assert s.signal is Signal.UPTIME_DROP and "suspect_uptime_drop (20)" in s.evidence


def test_resolution_reads_what_the_probes_said() -> None:
    assert resolution(RoundStatus.FAIL) is SuspicionStatus.CONFIRMED
    assert resolution(RoundStatus.CLEAN) is SuspicionStatus.CLEARED
    assert resolution(RoundStatus.TRANSPORT) is SuspicionStatus.UNCONFIRMED
    assert resolution(None) is SuspicionStatus.UNCONFIRMED


OUTCOMES = st.sampled_from(list(LiveOutcome))
COUNTS = st.lists(st.tuples(OUTCOMES, st.integers(1, 50), st.integers(0, 299)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(COUNTS, st.integers(1, 100), st.floats(0.01, 1.0))
def test_below_min_requests_never_triggers(raw: list[tuple[LiveOutcome, int, int]], minimum: int,
                                           rate: float) -> None:
    rules = SuspicionRules(300, minimum, rate, 0, 900)
    counts = [count(o, n, ago_s=a) for o, n, a in raw]
    counted = sum(c.requests for c in counts if c.outcome.is_counted)
    found = run(counts, rules=rules)
    if counted < minimum:
        assert found == []
    for s in found:
        assert s.requests is not None and s.requests >= minimum and s.failures is not None
        # The rule compares the exact rate; the evidence records it rounded to 4 digits (which may fall below
        # a threshold the exact rate reached, e.g. 1/3 -> 0.3333 against 0.33333).
        assert s.failures / s.requests >= rate
        assert s.failure_rate == round(s.failures / s.requests, 4)


def test_a_rate_at_the_threshold_triggers_though_its_rounding_falls_below() -> None:
    rules = SuspicionRules(300, 3, 0.33333, 0, 900)
    found = run([count(LiveOutcome.CUT_STREAM, 1), count(LiveOutcome.OK, 2)], rules=rules)
    assert [(s.requests, s.failures, s.failure_rate) for s in found] == [(3, 1, 0.3333)]


@settings(max_examples=200, deadline=None)
@given(COUNTS, st.integers(1, 30))
def test_more_failures_never_clear_a_suspicion(raw: list[tuple[LiveOutcome, int, int]], extra: int) -> None:
    before = run([count(o, n, ago_s=a) for o, n, a in raw])
    after = run([count(o, n, ago_s=a) for o, n, a in raw] + [count(LiveOutcome.CUT_STREAM, extra)])
    assert {s.tag for s in before} <= {s.tag for s in after}


@settings(max_examples=200, deadline=None)
@given(STATES, st.sampled_from([RoundStatus.CLEAN, RoundStatus.TRANSPORT, RoundStatus.INCONCLUSIVE, None]),
       COUNTS)
def test_a_suspicion_never_suspends_by_itself(state: EndpointState, probed: RoundStatus | None,
                                              raw: list[tuple[LiveOutcome, int, int]]) -> None:
    """Whatever live traffic says, the only thing a suspicion adds is a partial round; unless its pinned
    probes fail the endpoint, that round suspends nothing (and the suspicion is not confirmed)."""
    suspends_nothing_by_itself(state, probed, [count(o, n, ago_s=a) for o, n, a in raw])


def suspends_nothing_by_itself(state: EndpointState, probed: RoundStatus | None,
                               counts: list[LiveCount]) -> list[Suspicion]:
    found = run(counts, endpoints=[Endpoint(M, "alpha", "Alpha")], states={"alpha": state})
    if state.fail_streak >= 2 or state.is_suspended:  # the policy acts on its own streak, suspicion or not
        return found
    rnd = RoundInput("confirm", NOW, M, {"alpha": probed} if probed else {},
                     discovered=("alpha", "b", "c", "d"))
    _, decisions = decide({"alpha": state}, rnd, PolicyConfig(mode=Mode.ENFORCE))
    assert not [d for d in decisions if d.action in SUSPEND]
    assert all(resolution(probed) is not SuspicionStatus.CONFIRMED for _ in found)
    return found


@pytest.mark.parametrize("probed_as", [RoundStatus.CLEAN, RoundStatus.TRANSPORT, RoundStatus.INCONCLUSIVE, None])
@pytest.mark.parametrize("fail_streak", [0, 1])
def test_a_raised_suspicion_suspends_nothing_by_itself(probed_as: RoundStatus | None, fail_streak: int) -> None:
    """The property's case that matters, for certain: a suspicion is raised, and still nothing is suspended."""
    state = EndpointState(M, "alpha", Mode.ENFORCE, fail_streak=fail_streak)
    found = suspends_nothing_by_itself(state, probed_as, [count(LiveOutcome.CUT_STREAM, 30)])
    assert [(s.tag, s.signal) for s in found] == [("alpha", Signal.LIVE_FAILURE_RATE)]


def test_tally_spends_evidence_from_before_a_previous_suspicion() -> None:
    counts = [count(LiveOutcome.CUT_STREAM, 30, ago_s=240), count(LiveOutcome.OK, 5, ago_s=30)]
    t = tally(counts, EPS, since={"alpha": NOW - timedelta(seconds=120)}, until=NOW + timedelta(minutes=1))
    assert (t["alpha"].requests, t["alpha"].failures) == (5, 0)
