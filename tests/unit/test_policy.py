"""docs/design.md "The quarantine policy", rule by rule, with whole-state asserts (h11 style).

A history is written as one string per tag, one character per round (30 minutes apart from T0):
F fail, C clean, T transport, I inconclusive, "." discovered but no status, "-" not discovered at all.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from tasks.config import CanaryConfig
from tasks.config.loading import apply_overrides
from tasks.core.policy import PolicyConfig, RoundInput, decide, effective_ladder_step
from tasks.core.types import Action, Decision, Mode
from tests.support.policy_rounds import DAY, ENF, OBS, STEP, T0, M, States, actions, one_round, run, st, suspended_x

pytestmark = pytest.mark.unit


# -- rules 2, 3 and 4: streaks and suspension ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("x", "suspended_in"),
    [
        ("FF", 1),
        ("FTF", 2),  # transport freezes the streak
        ("FIF", 2),  # inconclusive freezes it
        ("F.F", 2),  # discovered but no status: absent, frozen
        ("F-F", 2),  # not even discovered: frozen
        ("FTTTIF", 5),
        ("CFF", 2),
        ("FCF", None),  # a clean round between two fails resets the streak
        ("FCFCF", None),
        ("F", None),  # one bad round is not enough
        ("TTTT", None),
    ],
    ids=lambda v: str(v),
)
def test_two_failing_rounds_suspend(x: str, suspended_in: int | None) -> None:
    others = {t: "C" * len(x) for t in ("b", "c")}
    states, decisions = run({"x": x, **others})
    if suspended_in is None:
        assert actions(decisions) == []
        assert not states["x"].is_suspended
        return
    at = T0 + suspended_in * STEP
    fail_ids = tuple(f"r{i}" for i, c in enumerate(x) if c == "F")[-2:]
    assert decisions == [
        Decision(
            at=at,
            model=M,
            tag="x",
            action=Action.SUSPEND,
            mode=Mode.ENFORCE,
            ladder_step=1,
            until=at + DAY,
            reason="failed 2 rounds in a row (fail_rounds 2)",
            evidence_round_ids=fail_ids,
            round_id=f"r{suspended_in}",
        )
    ]
    assert states["x"] == st(suspended_until=at + DAY, suspended_at=at, ladder_step=1)


def test_streaks_whole_state_after_mixed_rounds() -> None:
    states, _ = run({"x": "CCFTF", "b": "CCCCC", "c": "CCCCC"}, cfg=replace(ENF, fail_rounds=3))
    assert states["x"] == st(fail_streak=2, fail_rounds=("r2", "r4"), streak_at=T0 + 4 * STEP)
    assert states["b"] == st("b", clean_streak=5, clean_rounds=("r3", "r4"), streak_at=T0 + 4 * STEP)


def test_new_endpoints_start_in_the_configured_mode() -> None:
    states, _ = run({"x": "C"}, cfg=OBS)
    assert states == {"x": st(mode=Mode.OBSERVE, clean_streak=1, clean_rounds=("r0",), streak_at=T0)}


def test_naive_round_time_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        decide({}, RoundInput("r", datetime(2026, 1, 1), M, {}), ENF)


# -- rule 1: expiry ------------------------------------------------------------------------------------------
def test_expiry_at_exactly_until_streaks_carry_on() -> None:
    states, decisions = one_round(
        {"x": suspended_x(fail_streak=1, fail_rounds=("old",))},
        T0,
        {"x": "T", **{t: "C" for t in "bc"}},
        ENF,
        "r9",
    )
    assert actions(decisions) == [("x", "expire")]
    assert decisions[0].until == T0 and decisions[0].at == T0
    assert states["x"] == st(fail_streak=1, fail_rounds=("old",), ladder_step=1, last_suspension_end=T0)


def test_no_expiry_before_until() -> None:
    states, decisions = one_round(
        {"x": suspended_x(until=T0 + STEP)}, T0, {"x": "T", "b": "C", "c": "C"}, ENF, "r"
    )
    assert decisions == [] and states["x"] == suspended_x(until=T0 + STEP)


def test_expiry_then_one_fail_does_not_resuspend() -> None:
    states, decisions = run({"x": "F", "b": "C", "c": "C"}, states={"x": suspended_x()})
    assert actions(decisions) == [("x", "expire")]
    assert states["x"] == st(fail_streak=1, fail_rounds=("r0",), ladder_step=1, last_suspension_end=T0,
                             streak_at=T0)


@pytest.mark.parametrize("during", ["FFT", "FF.", "FTF", "TFF"], ids=str)
def test_failing_two_rounds_during_suspension_resuspends_at_expiry_one_step_up(during: str) -> None:
    start = T0 - (len(during) - 1) * STEP  # the last column is the expiry round, at T0
    states, decisions = run({"x": during, "b": "CCC", "c": "CCC"}, states={"x": suspended_x()}, start=start)
    assert actions(decisions) == [("x", "expire"), ("x", "suspend")]
    assert decisions[1].ladder_step == 2 and decisions[1].until == T0 + 3 * DAY
    assert states["x"] == st(
        suspended_until=T0 + 3 * DAY, suspended_at=T0, ladder_step=2, last_suspension_end=T0
    )


def test_expiry_comes_before_the_floor_of_other_endpoints() -> None:
    # "a" is decided before "z" in tag order; z's expiry must already count as routable for a's floor.
    states, decisions = run(
        {"a": "FF", "z": "TT", "b": "CC"}, states={"z": replace(suspended_x(T0 + STEP), tag="z")}
    )
    assert actions(decisions) == [("z", "expire"), ("a", "suspend")]
    assert states["a"].is_suspended and not states["z"].is_suspended


# -- rule 5: ladder and decay --------------------------------------------------------------------------------
def test_ladder_steps_one_three_seven_seven_days() -> None:
    states: States = {}
    lengths = []
    ts = T0
    for episode in range(5):
        states, made = run({"x": "FF", "b": "CC", "c": "CC"}, states=states, start=ts, prefix=f"e{episode}r")
        suspend = [d for d in made if d.action is Action.SUSPEND]
        assert len(suspend) == 1
        lengths.append((suspend[0].ladder_step, suspend[0].until - suspend[0].at))  # type: ignore[operator]
        ts = suspend[0].until  # type: ignore[assignment]
    assert lengths == [(1, DAY), (2, 3 * DAY), (3, 7 * DAY), (4, 7 * DAY), (5, 7 * DAY)]


@pytest.mark.parametrize(
    ("since_end", "expected_step", "expected_len"),
    [
        (timedelta(days=14), 1, DAY),  # exactly ladder_decay: the ladder restarts
        (timedelta(days=14) - STEP, 3, 7 * DAY),
        (timedelta(days=30), 1, DAY),
        (timedelta(hours=1), 3, 7 * DAY),
    ],
    ids=["exactly-14d", "14d-minus-a-round", "30d", "1h"],
)
def test_decay(since_end: timedelta, expected_step: int, expected_len: timedelta) -> None:
    ended = T0 - since_end
    before = st(ladder_step=2, last_suspension_end=ended, fail_streak=1, fail_rounds=("old",))
    assert effective_ladder_step(before, T0, ENF) == (0 if expected_step == 1 else 2)
    states, decisions = run({"x": "F", "b": "C", "c": "C"}, states={"x": before})
    assert [(d.action, d.ladder_step, d.until) for d in decisions] == [
        (Action.SUSPEND, expected_step, T0 + expected_len)
    ]
    assert decisions[0].evidence_round_ids == ("old", "r0")
    assert states["x"] == st(
        ladder_step=expected_step,
        suspended_until=T0 + expected_len,
        suspended_at=T0,
        last_suspension_end=ended,
    )


def test_ladder_from_config() -> None:
    cfg = PolicyConfig.from_config(apply_overrides(CanaryConfig(), {"ladder": "2h,5h", "mode": "enforce"}))
    _, decisions = run({"x": "FF", "b": "CC", "c": "CC"}, cfg=cfg)
    assert decisions[0].until == T0 + STEP + timedelta(hours=2)
