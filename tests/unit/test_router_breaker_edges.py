"""Boundaries of the router's circuit breaker (provider_canary/router/breaker.py) that test_router_circuit_rules.py's
walks stay clear of: the state names /healthz shows at the instant a circuit half-opens, a breaker turned off with a
circuit still open, a trial's timeout to the second, the whole circuit after each failure (what a skip later reports as
the endpoint's reason and provider), the time left, the doubling's bound, and which words are status codes."""

from __future__ import annotations

import pytest

from provider_canary.router import breaker as b
from provider_canary.router import reasons as r
from provider_canary.router.breaker import Change, Circuit, Policy, Score
from provider_canary.router.reasons import Cause, FailoverReason

pytestmark = pytest.mark.unit
POLICY = Policy(allowed_fails=2, cooldown_s=30.0, max_cooldown_s=300.0, trial_timeout_s=120.0)
OPEN = Circuit(fails=2, open_until=130.0, opens=1)


def test_state_names_and_the_instant_a_circuit_half_opens() -> None:
    assert b.CLOSED.state(0.0) == "closed"
    assert (OPEN.state(129.9), OPEN.state(130.0)) == ("open", "half_open")
    assert Circuit(fails=2, open_until=130.0, opens=1, trial_since=131.0).state(132.0) == "trial"


def test_a_breaker_turned_off_blocks_nothing_even_with_a_circuit_left_open() -> None:
    off = Policy(allowed_fails=0)
    assert not b.is_blocked(OPEN, 100.0, off) and not b.is_blocked(b.CLOSED, 100.0, POLICY)


def test_a_trial_frees_its_slot_when_its_timeout_is_reached() -> None:
    trying = Circuit(fails=2, open_until=130.0, opens=1, trial_since=200.0)
    assert b.is_blocked(trying, 319.9, POLICY) and not b.is_blocked(trying, 320.0, POLICY)


def test_each_failure_keeps_its_reason_and_provider_and_counts_once() -> None:
    first, second, third = r.http(502), r.fixed(Cause.CONNECT), r.fixed(Cause.TIMEOUT)
    one, change = b.record(b.CLOSED, Score.FAIL, False, 100.0, POLICY, first, "Alpha")
    assert (one, change) == (Circuit(fails=1, last_reason=first, last_provider="Alpha"), None)
    two, change = b.record(one, Score.FAIL, False, 100.0, POLICY, second, "Beta")
    assert (two, change) == (Circuit(fails=2, open_until=130.0, opens=1, last_reason=second, last_provider="Beta"),
                             Change.OPENED)
    trial, _ = b.admit(two, 130.0, POLICY)
    again, change = b.record(trial, Score.FAIL, True, 131.0, POLICY, third, "Gamma")
    assert (again, change) == (Circuit(fails=3, open_until=191.0, opens=2, last_reason=third, last_provider="Gamma"),
                               Change.OPENED)


def test_the_time_left_until_a_trial() -> None:
    assert b.remaining_s(b.CLOSED, 100.0) is None
    assert b.remaining_s(OPEN, 100.0) == 30.0
    assert b.remaining_s(OPEN, 130.0) is None


def test_the_open_period_doubles_at_most_32_times() -> None:
    wide = Policy(allowed_fails=1, cooldown_s=1.0, max_cooldown_s=1e12)
    assert wide.open_for(33) == wide.open_for(40) == 2.0 ** 32


@pytest.mark.parametrize(("reason", "expected"), [
    (r.http(500), Score.FAIL), (r.http(408), Score.FAIL), (r.http(499), Score.NEUTRAL),
    (FailoverReason(Cause.FAILED_CHECK, "500"), Score.OK),
    (FailoverReason(Cause.ROUTER_OVERLOADED, "503"), Score.NEUTRAL),
], ids=["500", "408", "499", "failed-check-digits", "overloaded-digits"])
def test_only_an_http_status_is_read_as_a_code(reason: FailoverReason, expected: Score) -> None:
    assert b.score("failed_over", reason, None) is expected
