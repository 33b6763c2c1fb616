"""Pacing posts to one Slack channel (tasks/core/pacing.py, and the delivery loop's Pacer on a step clock)."""

from __future__ import annotations

import pytest

from tasks.alerts.delivery_loop import Pacer
from tasks.core.pacing import Bucket, Pace, hold, take

pytestmark = pytest.mark.unit


def test_a_burst_goes_at_once_then_one_post_per_interval() -> None:
    pace = Pace(per_s=1.0, burst=3)
    bucket, waits = Bucket.full(pace, 0.0), []
    for _ in range(6):  # six posts asked for at t=0: three at once, then one a second
        bucket, wait = take(bucket, pace, 0.0)
        waits.append(wait)
    assert waits == [0.0, 0.0, 0.0, 1.0, 2.0, 3.0]


def test_a_quiet_spell_refills_the_burst_and_no_more() -> None:
    pace = Pace(per_s=1.0, burst=3)
    bucket = Bucket.full(pace, 0.0)
    for _ in range(3):
        bucket, _ = take(bucket, pace, 0.0)
    bucket, wait = take(bucket, pace, 100.0)  # long quiet: full again, capped at the burst
    assert wait == 0.0 and bucket.tokens == 2.0


def test_a_429_holds_the_channel_for_its_retry_after() -> None:
    pace = Pace(per_s=1.0, burst=3)
    bucket = hold(Bucket.full(pace, 0.0), 10.0, 30.0)
    _, wait = take(bucket, pace, 10.0)
    assert wait == pytest.approx(30.0)
    _, later = take(bucket, pace, 40.0)
    assert later == 0.0


def test_the_default_pace_stays_under_slacks_one_a_second() -> None:
    pace = Pace()
    bucket = Bucket.full(pace, 0.0)
    waits = []
    for _ in range(pace.burst + 4):
        bucket, wait = take(bucket, pace, 0.0)
        waits.append(wait)
    gaps = [b - a for a, b in zip(waits[pace.burst:], waits[pace.burst + 1:], strict=False)]
    assert all(g > 1.0 for g in gaps), gaps


def test_the_pacer_sleeps_its_turn_on_the_clock_it_is_given() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    pacer = Pacer(Pace(per_s=2.0, burst=1), clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        pacer.wait()
    assert slept == [0.5, 0.5]
    pacer.hold(5.0)
    pacer.wait()
    assert slept[-1] == pytest.approx(5.0)


def test_one_token_left_is_enough_and_a_short_retry_after_holds_for_itself() -> None:
    assert take(Bucket(1.0, 5.0), Pace(), 5.0) == (Bucket(0.0, 5.0), 0.0)
    assert take(Bucket(1.5, 5.0), Pace(), 5.0) == (Bucket(0.5, 5.0), 0.0)
    assert hold(Bucket(0.0, 5.0), 10.0, 0.5) == Bucket(1.0, 10.5)
    assert hold(Bucket(0.0, 5.0), 10.0, -3.0) == Bucket(1.0, 10.0)
