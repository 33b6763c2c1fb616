"""docs/design.md "The quarantine policy": rule 6 (restore), rule 4 (the floor) and rule 7 (lift), with whole-state
asserts (the histories: tests/support/policy_rounds.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tasks.core.policy import lift
from tasks.core.types import Action, Decision, Layer, Mode
from tests.support.policy_rounds import DAY, ENF, STEP, T0, M, actions, run, st

pytestmark = pytest.mark.unit


# -- rule 6: restore -----------------------------------------------------------------------------------------
def test_two_clean_rounds_restore_early() -> None:
    states, decisions = run({"x": "FFCTC", "b": "CCCCC", "c": "CCCCC"})
    assert actions(decisions) == [("x", "suspend"), ("x", "restore")]
    restore = decisions[1]
    assert restore.evidence_round_ids == ("r2", "r4") and restore.until == T0 + STEP + DAY
    assert states["x"] == st(
        clean_streak=2, clean_rounds=("r2", "r4"), ladder_step=1, last_suspension_end=T0 + 4 * STEP,
        streak_at=T0 + 4 * STEP,
    )


def test_one_clean_round_does_not_restore() -> None:
    states, decisions = run({"x": "FFCFC", "b": "CCCCC", "c": "CCCCC"})
    assert actions(decisions) == [("x", "suspend")]
    assert states["x"].is_suspended and states["x"].clean_streak == 1


def test_restore_then_fail_twice_suspends_one_step_up() -> None:
    states, decisions = run({"x": "FFCCFFF", "b": "C" * 7, "c": "C" * 7})
    assert [(a, d.ladder_step) for a, d in zip(actions(decisions), decisions, strict=True)] == [
        (("x", "suspend"), 1),
        (("x", "restore"), 1),
        (("x", "suspend"), 2),
    ]
    assert states["x"].suspended_until == T0 + 5 * STEP + 3 * DAY


def test_restore_then_one_fail_stays_routable() -> None:
    states, decisions = run({"x": "FFCCF", "b": "C" * 5, "c": "C" * 5})
    assert actions(decisions) == [("x", "suspend"), ("x", "restore")]
    assert not states["x"].is_suspended and states["x"].fail_streak == 1


# -- rule 4: the floor ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fleet", "expected"),
    [
        ({"x": "FF", "b": "CC", "c": "CC"}, "suspend"),  # 3 routable: 2 remain
        ({"x": "FF", "b": "CC"}, "floor_blocked"),  # 2 routable: 1 would remain
        ({"x": "FF"}, "floor_blocked"),  # 1 routable: none would remain
        ({"x": "FF", "b": "CC", "c": "TT"}, "suspend"),  # transport does not make an endpoint unroutable
        ({"x": "FF", "b": "CC", "c": ".."}, "suspend"),  # discovered without a status still routes
        ({"x": "FF", "b": "CC", "c": "C-"}, "floor_blocked"),  # not discovered this round: does not count
    ],
    ids=["3-routable", "2-routable", "1-routable", "transport-counts", "no-status-counts", "undiscovered"],
)
def test_floor(fleet: dict[str, str], expected: str) -> None:
    states, decisions = run(fleet)
    assert actions(decisions) == [("x", expected)]
    if expected == "floor_blocked":
        assert decisions[0].evidence_round_ids == ("r0", "r1") and decisions[0].until is None
        assert states["x"] == st(fail_streak=2, fail_rounds=("r0", "r1"), floor_blocked=True, streak_at=T0 + STEP)


@pytest.mark.parametrize("layer", [Layer.BUILTIN, Layer.OPERATIONAL])
def test_floor_does_not_count_excluded_endpoints(layer: Layer) -> None:
    _, decisions = run({"x": "FF", "b": "CC", "c": "CC"}, excluded={"c": layer})
    assert actions(decisions) == [("x", "floor_blocked")]


def test_floor_blocked_once_per_episode_and_streak_kept() -> None:
    states, decisions = run({"x": "FFFTFCFF", "b": "C" * 8})
    assert [(d.action, d.round_id) for d in decisions] == [
        (Action.FLOOR_BLOCKED, "r1"),
        (Action.FLOOR_BLOCKED, "r7"),
    ]
    assert states["x"] == st(fail_streak=2, fail_rounds=("r6", "r7"), floor_blocked=True, streak_at=T0 + 7 * STEP)


def test_suspended_as_soon_as_the_floor_allows() -> None:
    states, decisions = run({"x": "FFTT", "b": "CCCC", "c": "--CC"})
    assert [(d.action, d.round_id) for d in decisions] == [
        (Action.FLOOR_BLOCKED, "r1"),
        (Action.SUSPEND, "r2"),
    ]
    assert states["x"].suspended_at == T0 + 2 * STEP and states["x"].floor_blocked is False


def test_several_crossing_in_one_round_are_decided_in_tag_order() -> None:
    states, decisions = run({"c": "FF", "a": "FF", "b": "FF", "d": "CC"})
    assert actions(decisions) == [("a", "suspend"), ("b", "suspend"), ("c", "floor_blocked")]
    assert [t for t, s in sorted(states.items()) if s.is_suspended] == ["a", "b"]


def test_min_hosts_zero_lets_the_last_endpoint_go() -> None:
    _, decisions = run({"x": "FF"}, cfg=replace(ENF, min_hosts=0))
    assert actions(decisions) == [("x", "suspend")]


# -- rule 7: lift --------------------------------------------------------------------------------------------
def test_lift_during_suspension() -> None:
    states, _ = run({"x": "FFF", "b": "CCC", "c": "CCC"})
    now = T0 + 3 * STEP
    lifted, decisions = lift(states, "x", now, "alice", "fixed upstream", ENF)
    assert decisions == [
        Decision(
            at=now,
            model=M,
            tag="x",
            action=Action.LIFT,
            mode=Mode.ENFORCE,
            ladder_step=1,
            until=T0 + STEP + DAY,
            reason="fixed upstream",
            actor="alice",
        )
    ]
    assert lifted["x"] == st(ladder_step=1, last_suspension_end=now)
    assert lifted["b"] == states["b"] and states["x"].is_suspended  # the input is not modified
    # the fail seen during the suspension was spent by the lift: one more fail does not re-suspend
    after, made = run({"x": "F", "b": "C", "c": "C"}, states=lifted, start=now + STEP)
    assert made == [] and after["x"].fail_streak == 1


@pytest.mark.parametrize("tag", ["x", "unknown"])
def test_lift_when_not_suspended_changes_nothing(tag: str) -> None:
    states, _ = run({"x": "F", "b": "C"})
    lifted, decisions = lift(states, tag, T0, "alice", "why", ENF)
    assert decisions == [] and lifted == states
