"""The dead-man check: two silent intervals make a model overdue, once per silence episode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tasks.core.deadman import overdue_models

pytestmark = pytest.mark.unit

T = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
HALF_HOUR = timedelta(minutes=30)


@pytest.mark.parametrize(
    ("silence", "overdue"),
    [
        (timedelta(0), False),
        (HALF_HOUR, False),
        (timedelta(minutes=59), False),
        (timedelta(minutes=60), False),  # exactly two intervals: the second round may still be finishing
        (timedelta(minutes=60, seconds=1), True),
        (timedelta(hours=5), True),
    ],
    ids=["just-ran", "one-interval", "59m", "60m", "60m1s", "5h"],
)
def test_two_intervals_of_silence(silence: timedelta, overdue: bool) -> None:
    result = overdue_models({"m": T}, T + silence, HALF_HOUR)
    assert [o.model for o in result] == (["m"] if overdue else [])
    if overdue:
        assert result[0].silent_for == silence and result[0].last_complete_ts == T


def test_grace_extends_the_limit() -> None:
    now = T + timedelta(minutes=70)
    assert overdue_models({"m": T}, now, HALF_HOUR, grace=timedelta(minutes=15)) == []
    assert [o.model for o in overdue_models({"m": T}, now, HALF_HOUR, grace=timedelta(minutes=5))] == ["m"]


def test_never_completed_needs_a_start_and_a_grace() -> None:
    now = T + timedelta(hours=2)
    assert overdue_models({"m": None}, now, HALF_HOUR) == []  # no reference point: cannot judge
    assert overdue_models({"m": None}, now, HALF_HOUR, watching_since=now - timedelta(minutes=50)) == []
    [o] = overdue_models({"m": None}, now, HALF_HOUR, watching_since=T)
    assert (o.model, o.last_complete_ts, o.silent_for) == ("m", None, timedelta(hours=2))
    assert o.key == "deadman|m|never"


def test_key_fires_once_per_silence_episode() -> None:
    first = overdue_models({"m": T}, T + timedelta(hours=2), HALF_HOUR)
    later = overdue_models({"m": T}, T + timedelta(hours=9), HALF_HOUR)
    assert first[0].key == later[0].key == "deadman|m|2026-11-01T10:00:00+00:00"
    recovered = T + timedelta(hours=10)
    next_episode = overdue_models({"m": recovered}, recovered + timedelta(hours=2), HALF_HOUR)
    assert next_episode[0].key != first[0].key


def test_key_is_utc_whatever_the_input_zone() -> None:
    from datetime import timezone

    local = T.astimezone(timezone(timedelta(hours=2)))
    [o] = overdue_models({"m": local}, T + timedelta(hours=3), HALF_HOUR)
    assert o.key == "deadman|m|2026-11-01T10:00:00+00:00"


def test_only_silent_models_in_model_order() -> None:
    now = T + timedelta(hours=3)
    last = {"z/model": T, "a/model": T, "fresh": now - HALF_HOUR}
    assert [o.model for o in overdue_models(last, now, HALF_HOUR)] == ["a/model", "z/model"]


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval must be positive"):
        overdue_models({"m": T}, T, timedelta(0))
