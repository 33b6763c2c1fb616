"""The policy's decisions whole (tasks/core/policy.py), as `canary explain`, Slack and the decisions table show
them: the reason each one gives, and the state an endpoint is left in after a suspension, a floor block, an
expiry, an admin's lift and a mode switch."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tasks.core.policy import PolicyConfig, carry_over, decide, lift
from tasks.core.types import Action, Decision, Mode
from tests.support.policy_rounds import DAY, ENF, STEP, T0, M, run, st

pytestmark = pytest.mark.unit
E, OBS = Mode.ENFORCE, Mode.OBSERVE


def test_restore_and_floor_give_their_reasons() -> None:
    _, decisions = run({"x": "FFCTC", "b": "CCCCC", "c": "CCCCC"})
    assert [(d.action, d.reason) for d in decisions] == [
        (Action.SUSPEND, "failed 2 rounds in a row (fail_rounds 2)"),
        (Action.RESTORE, "2 clean rounds in a row (restore_rounds 2)")]
    states, [blocked] = run({"x": "FF", "b": "CC"})
    assert blocked == Decision(at=T0 + STEP, model=M, tag="x", action=Action.FLOOR_BLOCKED, mode=E, ladder_step=0,
                               reason="floor: 1 other routable endpoint(s) < min_hosts 2",
                               evidence_round_ids=("r0", "r1"), round_id="r1")
    assert states["x"].floor_blocked and states["x"].fail_rounds == ("r0", "r1")


def test_a_suspension_clears_both_streaks_and_their_rounds() -> None:
    states, _ = run({"x": "CFF", "b": "CCC", "c": "CCC"})
    x = states["x"]
    assert (x.fail_streak, x.clean_streak, x.fail_rounds, x.clean_rounds, x.streak_at) == (0, 0, (), (), None)


def test_expiry_says_so_and_keeps_the_streaks() -> None:
    suspended = st(suspended_until=T0 + DAY, suspended_at=T0, ladder_step=1, clean_streak=1, clean_rounds=("r",),
                   streak_at=T0)
    states, decisions = run({"x": "C", "b": "C", "c": "C"}, states={"x": suspended}, start=T0 + DAY)
    assert [(d.action, d.reason, d.until, d.round_id) for d in decisions] == [
        (Action.EXPIRE, "suspension ran out", T0 + DAY, "r0")]
    assert states["x"].last_suspension_end == T0 + DAY and states["x"].clean_rounds == ("r", "r0")


def test_an_admins_lift_clears_every_streak_and_block() -> None:
    suspended = st(suspended_until=T0 + DAY, suspended_at=T0, ladder_step=2, fail_streak=1, clean_streak=1,
                   fail_rounds=("a",), clean_rounds=("b",), floor_blocked=True, streak_at=T0)
    states, [d] = lift({"x": suspended}, "x", T0 + STEP, "ana", "provider fixed it", ENF)
    assert states["x"] == st(ladder_step=2, last_suspension_end=T0 + STEP)
    assert (d.action, d.actor, d.reason, d.until, d.ladder_step) == (Action.LIFT, "ana", "provider fixed it",
                                                                      T0 + DAY, 2)


def test_a_mode_switch_drops_a_suspension_and_says_why() -> None:
    suspended = st(suspended_until=T0 + DAY, suspended_at=T0, ladder_step=1, floor_blocked=True)
    states, [d] = carry_over({"x": suspended}, OBS, T0 + STEP)
    assert states["x"] == st(mode=OBS, ladder_step=1, last_suspension_end=T0 + STEP)
    assert (d.action, d.actor, d.reason, d.at, d.until, d.ladder_step) == (
        Action.LIFT, "mode-switch", "mode switched to observe; suspension not carried over", T0 + STEP, T0 + DAY, 1)


def test_a_new_endpoint_starts_in_the_rounds_mode() -> None:
    from tasks.core.policy import RoundInput
    states, _ = decide({}, RoundInput("r", T0, M, {}, ("new",), {}), PolicyConfig(mode=OBS))
    assert states["new"].mode is OBS


@pytest.mark.parametrize("bad", [dict(fail_rounds=0), dict(restore_rounds=0), dict(min_hosts=-1),
                                 dict(ladder=())], ids=["fail", "restore", "hosts", "ladder"])
def test_each_bad_setting_alone_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PolicyConfig(**bad)  # type: ignore[arg-type]


def test_the_config_gives_restore_rounds_and_the_ladders_decay() -> None:
    from tasks.config import CanaryConfig
    cfg = CanaryConfig(models=(M,), restore_rounds=3, ladder_decay=timedelta(days=9))
    policy = PolicyConfig.from_config(cfg)
    assert (policy.restore_rounds, policy.ladder_decay) == (3, timedelta(days=9))


def test_decision_times_are_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time
    from datetime import UTC, timezone
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        tokyo = (T0 + STEP).astimezone(timezone(timedelta(hours=9)))
        _, [d] = lift({"x": st(suspended_until=T0 + DAY, suspended_at=T0)}, "x", tokyo, "ana", "fixed", ENF)
        assert d.at.tzinfo is UTC and d.at == T0 + STEP
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
