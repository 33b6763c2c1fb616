"""docs/design.md "The quarantine policy" in observe mode, and a switch between the modes, with whole-state asserts
(the histories: tests/support/policy_rounds.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tasks.core.policy import carry_over
from tasks.core.types import Action, Mode
from tests.support.policy_rounds import DAY, ENF, OBS, STEP, T0, actions, one_round, run, st, suspended_x

pytestmark = pytest.mark.unit


# -- observe mode --------------------------------------------------------------------------------------------
def test_observe_runs_the_same_machine_with_would_actions() -> None:
    history = {"x": "FFCC", "y": "FFFF", "z": "TTTT", "b": "CCCC", "c": "CCCC"}
    runs = {}
    for cfg in (ENF, OBS):
        z = replace(suspended_x(T0 + STEP), tag="z", mode=cfg.mode)
        runs[cfg.mode] = run(history, replace(cfg, min_hosts=4), states={"z": z})
    (enforce_states, enforce), (observe_states, observe) = runs[Mode.ENFORCE], runs[Mode.OBSERVE]
    assert [(d.round_id, *a) for d, a in zip(enforce, actions(enforce), strict=True)] == [
        ("r1", "z", "expire"),
        ("r1", "x", "suspend"),
        ("r1", "y", "floor_blocked"),
        ("r3", "x", "restore"),
        ("r3", "y", "suspend"),
    ]
    assert actions(observe) == [
        ("z", "would_expire"),
        ("x", "would_suspend"),
        ("y", "floor_blocked"),
        ("x", "would_restore"),
        ("y", "would_suspend"),
    ]
    assert [
        replace(d, action=e.action, mode=Mode.ENFORCE) for d, e in zip(observe, enforce, strict=True)
    ] == enforce
    assert {t: replace(s, mode=Mode.ENFORCE) for t, s in observe_states.items()} == enforce_states


# -- mode switch ---------------------------------------------------------------------------------------------
def test_carry_over_keeps_streaks_and_ladder_drops_the_suspension() -> None:
    shadow = {
        "x": st(
            mode=Mode.OBSERVE,
            fail_streak=1,
            fail_rounds=("r7",),
            ladder_step=2,
            suspended_until=T0 + DAY,
            suspended_at=T0 - DAY,
        ),
        "b": st("b", mode=Mode.OBSERVE, clean_streak=4),
    }
    states, decisions = carry_over(shadow, Mode.ENFORCE, T0)
    assert states == {
        "x": st(fail_streak=1, fail_rounds=("r7",), ladder_step=2, last_suspension_end=T0),
        "b": st("b", clean_streak=4),
    }
    assert [(d.action, d.mode, d.actor) for d in decisions] == [
        (Action.WOULD_LIFT, Mode.OBSERVE, "mode-switch")
    ]


def test_decide_carries_states_of_the_other_mode_over() -> None:
    real = {"x": suspended_x(until=T0 + DAY), "b": st("b"), "c": st("c")}
    states, decisions = one_round(real, T0, {"x": "F", "b": "C", "c": "C"}, OBS, "r0")
    assert [(d.action, d.mode) for d in decisions] == [(Action.LIFT, Mode.ENFORCE)]
    assert all(s.mode is Mode.OBSERVE and not s.is_suspended for s in states.values())
