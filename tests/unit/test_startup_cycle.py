"""`canary serve`'s first cycle (tasks/core/startup.py): at once on a database with no complete full round of a
model, or one older than an interval; otherwise with the schedule (a restart costs no extra cycle)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tasks.core.startup import startup_cycle_reason

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
EVERY = timedelta(minutes=30)


def test_a_model_without_a_full_round_runs_a_cycle_at_start() -> None:
    assert startup_cycle_reason({"a": None}, NOW, EVERY) == "no complete full round of a yet"
    many = dict.fromkeys("edcba")
    assert startup_cycle_reason({**many, "z": NOW}, NOW, EVERY) == "no complete full round of a, b, c and 2 more yet"


def test_a_full_round_older_than_an_interval_runs_a_cycle_at_start() -> None:
    last = {"a": NOW - timedelta(minutes=10), "b": NOW - timedelta(minutes=95), "c": NOW - timedelta(minutes=45)}
    assert startup_cycle_reason(last, NOW, EVERY) == (
        "the newest complete full round of b is 95 min old, more than the 30 min interval")


def test_recent_full_rounds_leave_the_first_cycle_to_the_schedule() -> None:
    assert startup_cycle_reason({"a": NOW - EVERY, "b": NOW}, NOW, EVERY) is None
    assert startup_cycle_reason({}, NOW, EVERY) is None
