"""The circuit breaker per upstream (provider_canary/router/breaker.py): what counts, the state machine, and its
properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import provider_canary.router.reasons as r
from provider_canary.router import breaker as b
from provider_canary.router.breaker import Admission, Change, Circuit, Policy, Score
from provider_canary.router.reasons import Cause

pytestmark = pytest.mark.unit

POLICY = Policy(allowed_fails=3, cooldown_s=30.0, max_cooldown_s=300.0, trial_timeout_s=120.0)


@pytest.mark.parametrize(("stage", "reason", "status", "score"), [
    ("failed_over", r.fixed(Cause.FIRST_CHUNK_TIMEOUT), None, Score.FAIL),
    ("failed_over", r.http(503), None, Score.FAIL),
    ("failed_over", r.http(524), None, Score.FAIL),
    ("failed_over", r.http(408), None, Score.FAIL),
    ("failed_over", r.fixed(Cause.CONNECT), None, Score.FAIL),
    ("failed_over", r.fixed(Cause.TRANSPORT_ERROR), None, Score.FAIL),
    ("failed_over", r.native("network_error"), None, Score.FAIL),
    ("failed_over", r.error_in_200(502), None, Score.FAIL),
    ("failed_over", r.fixed(Cause.STREAM_ENDED_BEFORE_COMMIT), None, Score.FAIL),
    ("failed_over", r.fixed(Cause.BAD_FRAME_BEFORE_COMMIT), None, Score.FAIL),
    ("failed_over", r.fixed(Cause.ERROR_CHUNK_BEFORE_COMMIT, 502), None, Score.FAIL),
    ("aborted", r.fixed(Cause.STREAM_CUT_AFTER_COMMIT), None, Score.FAIL),
    ("ended", r.fixed(Cause.UPSTREAM_ERROR_AFTER_COMMIT, "network_error"), None, Score.FAIL),
    ("ended", r.fixed(Cause.STREAM_CUT_AFTER_COMMIT), None, Score.NEUTRAL),  # counted once, when aborted
    ("ended", None, None, Score.NEUTRAL),
    ("failed_over", r.http(429), None, Score.NEUTRAL),  # Retry-After has its own cooldown
    ("failed_over", r.fixed(Cause.NO_ALLOWED_PROVIDERS), None, Score.NEUTRAL),  # the request's preferences
    ("failed_over", r.fixed(Cause.NO_ENDPOINTS), None, Score.NEUTRAL),
    ("skipped", r.fixed(Cause.PINNED_EXCLUDED), None, Score.NEUTRAL),
    ("skipped", r.fixed(Cause.CIRCUIT_OPEN), None, Score.NEUTRAL),
    ("failed_over", r.fixed(Cause.EMPTY_ANSWER), None, Score.OK),
    ("failed_over", r.failed_check("schema_violation"), None, Score.OK),
    ("committed", None, None, Score.OK),
    ("answered", None, 200, Score.OK),
    ("answered", None, 400, Score.NEUTRAL),  # the request's own error
    ("handed_later", None, 200, Score.NEUTRAL),
])
def test_what_counts_against_a_tier(stage: str, reason: r.FailoverReason | None, status: int | None,
                                    score: Score) -> None:
    assert b.score(stage, reason, status) is score


def test_a_cause_the_breaker_does_not_list_never_counts() -> None:
    """A router-side cause (its own saturation, added by another change) is neutral until it is listed."""
    unlisted = [c for c in Cause if c not in b.FAILING_CAUSES and c is not Cause.HTTP]
    assert all(b.score("failed_over", r.FailoverReason(c, "x"), None) is not Score.FAIL for c in unlisted)


def fail(c: Circuit, now: float, trial: bool = False) -> tuple[Circuit, Change | None]:
    return b.record(c, Score.FAIL, trial, now, POLICY, r.http(503), "Acme")


def test_three_failures_in_a_row_open_the_circuit_and_a_success_between_resets_the_count() -> None:
    c = b.CLOSED
    c, _ = fail(c, 0)
    c, _ = fail(c, 1)
    c, _ = b.record(c, Score.OK, False, 2, POLICY)
    assert c == b.CLOSED
    c, _ = fail(c, 3)
    c, _ = fail(c, 4)
    c, change = fail(c, 5)
    assert change is Change.OPENED and c.open_until == 35.0 and c.state(5) == "open"
    assert (c.last_reason, c.last_provider) == (r.http(503), "Acme")  # what a skip counts as, for whom
    assert b.admit(c, 34.9, POLICY) == (c, Admission.SKIP)


def test_half_open_lets_one_trial_through_and_its_success_closes_the_circuit() -> None:
    c = Circuit(fails=3, open_until=30.0, opens=1)
    c, first = b.admit(c, 30.0, POLICY)
    _, second = b.admit(c, 31.0, POLICY)  # a concurrent request meanwhile
    assert (first, second) == (Admission.TRIAL, Admission.SKIP) and c.state(31) == "trial"
    late, change = fail(c, 31.0)  # a request sent before it opened reports: only the trial decides
    assert (late, change) == (c, None)
    closed, change = b.record(c, Score.OK, True, 32.0, POLICY)
    assert (closed, change) == (b.CLOSED, Change.CLOSED)


def test_a_failed_trial_reopens_with_the_cooldown_doubled_up_to_the_cap() -> None:
    c, now, periods = Circuit(fails=3, open_until=30.0, opens=1), 30.0, []
    for _ in range(6):
        c, admission = b.admit(c, now, POLICY)
        assert admission is Admission.TRIAL
        c, change = fail(c, now, trial=True)
        assert change is Change.OPENED
        periods.append((c.open_until or 0) - now)
        now = c.open_until or 0
    assert periods == [60, 120, 240, 300, 300, 300]


def test_a_trial_without_an_outcome_frees_its_slot() -> None:
    c, _ = b.admit(Circuit(fails=3, open_until=30.0, opens=1), 30.0, POLICY)
    assert b.admit(b.release(c), 31.0, POLICY)[1] is Admission.TRIAL  # its client left
    neutral, _ = b.record(c, Score.NEUTRAL, True, 31.0, POLICY)  # a 429: no answer either way
    assert b.admit(neutral, 31.0, POLICY)[1] is Admission.TRIAL
    assert b.admit(c, 30.0 + 119, POLICY)[1] is Admission.SKIP
    assert b.admit(c, 30.0 + 121, POLICY)[1] is Admission.TRIAL  # never reported: the backstop


def test_allowed_fails_zero_turns_the_breaker_off() -> None:
    off = Policy(allowed_fails=0)
    c = b.CLOSED
    for now in range(10):
        c, change = b.record(c, Score.FAIL, False, now, off)
        assert change is None and b.admit(c, now, off)[1] is Admission.TRY


def test_max_cooldown_below_cooldown_never_shortens_the_first_period() -> None:
    assert Policy(cooldown_s=30, max_cooldown_s=0).open_for(1) == 30
    assert Policy(cooldown_s=30, max_cooldown_s=0).open_for(5) == 30
    assert Policy(cooldown_s=30, max_cooldown_s=300).open_for(100) == 300


EVENTS = st.lists(st.tuples(st.sampled_from(["admit", "fail", "ok", "neutral", "release"]),
                            st.floats(min_value=0, max_value=50)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(events=EVENTS)
def test_the_machine_stays_valid_and_opens_only_on_failures(events: list[tuple[str, float]]) -> None:
    """Over any sequence: open_until is set exactly when opens > 0, a trial only while open, at most one trial
    at a time, a circuit opens only on a FAIL, and nothing but the trial's success closes it."""
    c, now, trial_held = b.CLOSED, 0.0, False
    for kind, step in events:
        now += step
        before = c
        if kind == "admit":
            c, admission = b.admit(c, now, POLICY)
            assert not (admission is Admission.TRIAL and trial_held and now - (before.trial_since or 0) < 120)
            trial_held = trial_held or admission is Admission.TRIAL
            continue
        if kind == "release":
            c, trial_held = b.release(c), False
            continue
        score = {"fail": Score.FAIL, "ok": Score.OK, "neutral": Score.NEUTRAL}[kind]
        c, change = b.record(c, score, trial_held, now, POLICY)
        if before.is_open and trial_held:
            trial_held = False
        assert change is not Change.OPENED or score is Score.FAIL
        assert change is not Change.CLOSED or (score is Score.OK and before.trial_since is not None)
        assert (c.open_until is None) == (c.opens == 0)
        assert c.trial_since is None or c.open_until is not None
        if c.open_until is not None:
            assert 30.0 - 1e-6 <= c.open_until - now <= 300.0 + 1e-6 or change is None


def test_a_skip_of_an_open_circuit_counts_for_the_endpoint_as_the_failure_that_opened_it() -> None:
    """An open circuit must not hide a broken endpoint from the canary: each request that skips it is counted in
    `live_requests` as the circuit's last failure, with `reason` circuit_open; a skip of a tier whose providers the
    canary excluded counts for nothing."""
    from provider_canary.router.attempts import Stage, TierAttempt
    from provider_canary.router.routes import Route, Tier
    from tasks.core.live_records import LiveOutcome

    route = Route("model:chat", (Tier("http://a/api/v1", "m"),), model="chat")
    skip = TierAttempt(Stage.SKIPPED, route, 1, reason=r.fixed(Cause.CIRCUIT_OPEN),
                       opened_by=r.fixed(Cause.FIRST_CHUNK_TIMEOUT))
    assert (skip.live_outcome, skip.live_word) == (LiveOutcome.FIRST_CHUNK_TIMEOUT, "circuit_open")
    excluded = TierAttempt(Stage.SKIPPED, route, 1, reason=r.fixed(Cause.PINNED_EXCLUDED))
    assert (excluded.live_outcome, excluded.live_word) == (None, None)
