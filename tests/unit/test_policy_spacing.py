"""Rounds that count are apart in time (docs/design.md "The quarantine policy", rules 2 and 3): two failing (or
clean) rounds of an endpoint are consecutive only when at least `confirm_after_min` apart. A closer round is
recorded, but neither grows the streak nor breaks it; `confirm_after_min = 0` lets any two rounds count.

A history is one string per tag, one character per round (F fail, C clean, T transport), at the offsets given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tasks.config import CanaryConfig
from tasks.config.loading import apply_overrides
from tasks.core.policy import PolicyConfig, RoundInput, counts, decide, too_soon
from tasks.core.types import Action, Decision, EndpointState, Mode, RoundStatus

pytestmark = pytest.mark.unit

M = "vendor/model"
T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
ENF = PolicyConfig(mode=Mode.ENFORCE)  # round_spacing: the default confirm_after_min, 5 min
CODES = {"F": RoundStatus.FAIL, "C": RoundStatus.CLEAN, "T": RoundStatus.TRANSPORT}
HEALTHY = ("b", "c")  # two more routable endpoints, clean in every round: the floor never holds x back


def run(x: str, offsets: Sequence[timedelta], cfg: PolicyConfig = ENF,
        states: Mapping[str, EndpointState] | None = None) -> tuple[dict[str, EndpointState], list[Decision]]:
    assert len(x) == len(offsets)
    cur = dict(states or {})
    out: list[Decision] = []
    for i, (code, offset) in enumerate(zip(x, offsets, strict=True)):
        statuses = {"x": CODES[code], **dict.fromkeys(HEALTHY, RoundStatus.CLEAN)}
        cur, made = decide(cur, RoundInput(f"r{i}", T0 + offset, M, statuses, tuple(statuses)), cfg)
        out += made
    return cur, out


def actions(decisions: list[Decision]) -> list[tuple[str, str, str | None]]:
    return [(d.tag, str(d.action), d.round_id) for d in decisions]


def test_the_documented_install_order_decides_nothing_before_a_round_far_enough_apart() -> None:
    """serve's start-up cycle, `canary run` 28 s later, then the start-up round's confirmation 5 min after it."""
    states, decisions = run("FF", [0 * S, 28 * S])
    assert decisions == []
    assert states["x"] == EndpointState(M, "x", Mode.ENFORCE, fail_streak=1, fail_rounds=("r0",), streak_at=T0)
    _, decisions = run("FFF", [0 * S, 28 * S, 5 * MIN])
    assert actions(decisions) == [("x", "suspend", "r2")]
    assert decisions[0].evidence_round_ids == ("r0", "r2")  # the rounds that counted


@pytest.mark.parametrize(("second", "suspended"), [(5 * MIN, True), (5 * MIN - S, False), (30 * MIN, True)],
                         ids=["exactly-confirm_after_min", "a-second-short", "the-next-scheduled-round"])
def test_a_round_confirm_after_min_after_the_failing_one_counts(second: timedelta, suspended: bool) -> None:
    _, decisions = run("FF", [0 * S, second])
    assert actions(decisions) == ([("x", "suspend", "r1")] if suspended else [])


def test_the_spacing_is_measured_from_the_round_that_last_grew_the_streak() -> None:
    # r1 (3 min) did not count; r2 is 5 min after r0, the round that counted, though only 2 min after r1
    _, decisions = run("FFF", [0 * S, 3 * MIN, 5 * MIN])
    assert actions(decisions) == [("x", "suspend", "r2")]
    # a flood of close failing rounds still suspends, once one of them is far enough from the first
    _, decisions = run("FFFFFF", [i * MIN for i in range(6)])
    assert actions(decisions) == [("x", "suspend", "r5")]


def test_a_close_round_of_the_other_status_breaks_the_streak() -> None:
    states, decisions = run("FCF", [0 * S, 30 * S, 5 * MIN])
    assert decisions == [] and states["x"].fail_streak == 1 and states["x"].fail_rounds == ("r2",)


def test_transport_between_close_rounds_changes_nothing() -> None:
    _, decisions = run("FTF", [0 * S, 30 * S, 60 * S])
    assert decisions == []


def test_the_clean_streak_of_an_early_restore_needs_rounds_apart_too() -> None:
    suspended = {"x": EndpointState(M, "x", Mode.ENFORCE, suspended_until=T0 + timedelta(days=1),
                                    suspended_at=T0 - MIN, ladder_step=1)}
    states, decisions = run("CC", [0 * S, 30 * S], states=suspended)
    assert decisions == [] and states["x"].is_suspended and states["x"].clean_streak == 1
    _, decisions = run("CCC", [0 * S, 30 * S, 5 * MIN], states=suspended)
    assert actions(decisions) == [("x", "restore", "r2")] and decisions[0].evidence_round_ids == ("r0", "r2")


def test_confirm_after_min_zero_lets_any_two_rounds_count() -> None:
    cfg = PolicyConfig.from_config(apply_overrides(CanaryConfig(), {"confirm_after_min": "0", "mode": "enforce"}))
    assert cfg.round_spacing == timedelta(0)
    _, decisions = run("FF", [0 * S, 1 * S], cfg=cfg)
    assert actions(decisions) == [("x", "suspend", "r1")]


def test_the_spacing_is_confirm_after_min() -> None:
    cfg = PolicyConfig.from_config(apply_overrides(CanaryConfig(), {"confirm_after_min": "2"}))
    assert cfg.round_spacing == 2 * MIN
    _, decisions = run("FF", [0 * S, 2 * MIN], cfg=replace(cfg, mode=Mode.ENFORCE))
    assert actions(decisions) == [("x", "suspend", "r1")]


def test_a_streak_stored_before_the_rule_has_no_time_and_its_next_round_counts() -> None:
    before = {"x": EndpointState(M, "x", Mode.ENFORCE, fail_streak=1, fail_rounds=("old",))}
    _, decisions = run("F", [0 * S], states=before)
    assert actions(decisions) == [("x", "suspend", "r0")]


def test_a_suspension_spends_the_streak_and_its_time() -> None:
    states, _ = run("FF", [0 * S, 5 * MIN])
    assert states["x"].is_suspended and states["x"].streak_at is None
    # the first failing round after a suspension starts a new streak, however soon it comes
    states, _ = run("FFF", [0 * S, 5 * MIN, 5 * MIN + S])
    assert (states["x"].fail_streak, states["x"].streak_at) == (1, T0 + 5 * MIN + S)


@pytest.mark.parametrize(
    ("streaks", "status", "since", "expected"),
    [
        ((0, 0), RoundStatus.FAIL, 0 * S, True),  # starts a streak
        ((1, 0), RoundStatus.FAIL, 4 * MIN, False),  # continues it too soon
        ((1, 0), RoundStatus.FAIL, 5 * MIN, True),
        ((1, 0), RoundStatus.CLEAN, 0 * S, True),  # the other status: starts its own streak
        ((0, 2), RoundStatus.CLEAN, 1 * MIN, False),
        ((0, 2), RoundStatus.FAIL, 1 * S, True),
    ],
    ids=["start", "too-soon", "far-enough", "other-status", "clean-too-soon", "fail-after-clean"],
)
def test_counts(streaks: tuple[int, int], status: RoundStatus, since: timedelta, expected: bool) -> None:
    st = EndpointState(M, "x", Mode.ENFORCE, fail_streak=streaks[0], clean_streak=streaks[1], streak_at=T0)
    assert counts(st, status, T0 + since, ENF) is expected


def test_a_negative_spacing_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid policy config"):
        PolicyConfig(round_spacing=-S)


def test_observe_mode_applies_the_same_spacing() -> None:
    obs = replace(ENF, mode=Mode.OBSERVE)
    assert run("FF", [0 * S, 28 * S], cfg=obs)[1] == []
    assert [d.action for d in run("FFF", [0 * S, 28 * S, 5 * MIN], cfg=obs)[1]] == [Action.WOULD_SUSPEND]


def test_too_soon_names_the_endpoints_whose_round_did_not_count() -> None:
    states, _ = run("F", [0 * S])
    statuses = {"x": RoundStatus.FAIL, "b": RoundStatus.CLEAN, "c": RoundStatus.TRANSPORT, "new": RoundStatus.FAIL}
    assert too_soon(states, statuses, T0 + 28 * S, ENF) == ("b", "x")  # b: a clean streak of 1, 28 s old too
    assert too_soon(states, statuses, T0 + 5 * MIN, ENF) == ()
