"""docs/design.md "The quarantine policy", rule by rule, with whole-state asserts (h11 style).

A history is written as one string per tag, one character per round (30 minutes apart from T0):
F fail, C clean, T transport, I inconclusive, "." discovered but no status, "-" not discovered at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tasks.config import CanaryConfig
from tasks.config_loading import apply_overrides
from tasks.core.policy import PolicyConfig, RoundInput, carry_over, decide, effective_ladder_step, lift
from tasks.core.types import Action, Decision, EndpointState, Layer, Mode, RoundStatus

pytestmark = pytest.mark.unit

M = "meta-llama/llama-3.3-70b-instruct"
T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
STEP = timedelta(minutes=30)
DAY = timedelta(days=1)
ENF = PolicyConfig(mode=Mode.ENFORCE)
OBS = PolicyConfig(mode=Mode.OBSERVE)
CODES = {
    "F": RoundStatus.FAIL,
    "C": RoundStatus.CLEAN,
    "T": RoundStatus.TRANSPORT,
    "I": RoundStatus.INCONCLUSIVE,
}

States = dict[str, EndpointState]


def one_round(
    states: Mapping[str, EndpointState],
    ts: datetime,
    column: Mapping[str, str],
    cfg: PolicyConfig,
    rid: str,
    excluded: Mapping[str, Layer] | None = None,
) -> tuple[States, list[Decision]]:
    statuses = {t: CODES[c] for t, c in column.items() if c in CODES}
    discovered = tuple(sorted(t for t, c in column.items() if c != "-"))
    rnd = RoundInput(
        round_id=rid,
        round_ts=ts,
        model=M,
        statuses=statuses,
        discovered=discovered,
        excluded=dict(excluded or {}),
    )
    return decide(states, rnd, cfg)


def run(
    history: Mapping[str, str],
    cfg: PolicyConfig = ENF,
    *,
    states: Mapping[str, EndpointState] | None = None,
    start: datetime = T0,
    step: timedelta = STEP,
    excluded: Mapping[str, Layer] | None = None,
    prefix: str = "r",
) -> tuple[States, list[Decision]]:
    n = len(next(iter(history.values())))
    assert all(len(h) == n for h in history.values())
    cur: States = dict(states or {})
    out: list[Decision] = []
    for i in range(n):
        cur, made = one_round(
            cur, start + i * step, {t: h[i] for t, h in history.items()}, cfg, f"{prefix}{i}", excluded
        )
        out += made
    return cur, out


def actions(decisions: list[Decision]) -> list[tuple[str, str]]:
    return [(d.tag, str(d.action)) for d in decisions]


def st(tag: str = "x", mode: Mode = Mode.ENFORCE, **kw: object) -> EndpointState:
    return EndpointState(model=M, tag=tag, mode=mode, **kw)  # type: ignore[arg-type]


HEALTHY = {"b": "CC", "c": "CC"}  # two other routable endpoints: the floor allows one suspension


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
def suspended_x(until: datetime = T0, step: int = 1, **kw: object) -> EndpointState:
    return st(suspended_until=until, suspended_at=until - DAY, ladder_step=step, **kw)


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
