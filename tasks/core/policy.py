"""The quarantine policy (docs/design.md "The quarantine policy"): a pure function of history.

    decide(states, rnd, cfg) -> (new_states, decisions)     one round of one model
    lift(states, tag, now, who, reason, cfg)                rule 7, an admin's lift
    carry_over(states, mode, now)                           seed one mode's states from the other's

No clock, no I/O: `rnd.round_ts` (or `now`) is the only time. States are frozen `EndpointState`s keyed by tag;
the caller stores what comes back. One small function per rule; `decide` only orders them:

1. expire every due suspension (before anything else, so the floor sees expired endpoints as routable);
2./3. fold this round's status into the streaks (transport, inconclusive and absent freeze them; a round
   closer than `round_spacing` to the round that last grew the streak does not grow it);
6. restore suspended endpoints with `restore_rounds` clean rounds;
4./5. suspend (ladder with decay) or `floor_blocked`, endpoint by endpoint in tag order, so the floor counts
   the suspensions made earlier in the same round.

Ends of suspensions (1, 6) run before new ones (4) across endpoints; per endpoint it is docs/design.md's
(an endpoint can be expired and suspended again in one round, never suspended and restored).
Choices where docs/design.md is silent are listed in tasks/core/policy.md; in short: expiry and restore leave the
streaks as they are (they carry on), a suspension spends both, a lift spends both; `last_suspension_end` is
the time of the decision that ended it (expire/restore: round_ts, lift: now); `floor_blocked` is the same
in both modes and is raised once per episode (an episode ends with a clean round or a suspension); tags
with a status count as discovered; states of another mode are carried over (`carry_over`) first; a round
counts towards a streak only `round_spacing` (confirm_after_min) or more after the round that last grew it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from tasks.config import (
    DEFAULT_CONFIRM_AFTER_MIN,
    DEFAULT_FAIL_ROUNDS,
    DEFAULT_LADDER,
    DEFAULT_LADDER_DECAY,
    DEFAULT_MIN_HOSTS,
    DEFAULT_RESTORE_ROUNDS,
    CanaryConfig,
)
from tasks.core.types import Action, Decision, EndpointState, Layer, Mode, RoundStatus

__all__ = [
    "PolicyConfig",
    "RoundInput",
    "action_for",
    "apply_status",
    "carry_over",
    "counts",
    "decide",
    "effective_ladder_step",
    "expire",
    "lift",
    "restore",
    "routable_others",
    "suspend_or_block",
    "suspension_length",
    "too_soon",
]

#: In observe mode the same machine runs on shadow state; its decisions carry these names instead.
#: `floor_blocked` keeps its name in both modes: it says the same thing (the floor held the suspension back).
_SHADOW_ACTIONS: dict[Action, Action] = {
    Action.SUSPEND: Action.WOULD_SUSPEND,
    Action.RESTORE: Action.WOULD_RESTORE,
    Action.EXPIRE: Action.WOULD_EXPIRE,
    Action.LIFT: Action.WOULD_LIFT,
}


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """The policy's slice of CanaryConfig (meaning, units and defaults: tasks/config/__init__.py)."""

    fail_rounds: int = DEFAULT_FAIL_ROUNDS
    restore_rounds: int = DEFAULT_RESTORE_ROUNDS
    min_hosts: int = DEFAULT_MIN_HOSTS
    ladder: tuple[timedelta, ...] = DEFAULT_LADDER
    ladder_decay: timedelta = DEFAULT_LADDER_DECAY
    mode: Mode = Mode.OBSERVE
    #: Two rounds of an endpoint count as consecutive only this far apart or more (`confirm_after_min`):
    #: rounds seconds apart say nothing more than one. Zero: any two rounds count.
    round_spacing: timedelta = timedelta(minutes=DEFAULT_CONFIRM_AFTER_MIN)

    def __post_init__(self) -> None:
        if (self.fail_rounds < 1 or self.restore_rounds < 1 or self.min_hosts < 0 or not self.ladder
                or self.round_spacing < timedelta(0)):
            raise ValueError(f"invalid policy config: {self!r}")

    @classmethod
    def from_config(cls, cfg: CanaryConfig) -> PolicyConfig:
        return cls(
            fail_rounds=cfg.fail_rounds,
            restore_rounds=cfg.restore_rounds,
            min_hosts=cfg.min_hosts,
            ladder=tuple(cfg.ladder),
            ladder_decay=cfg.ladder_decay,
            mode=cfg.mode,
            round_spacing=timedelta(minutes=cfg.confirm_after_min),
        )


@dataclass(frozen=True, slots=True)
class RoundInput:
    """What the policy needs from one round of one model.

    `statuses`: round status per tag (a tag missing here is absent: its streaks freeze).
    `discovered`: tags discovery returned this round (tags with a status count as discovered too).
    `excluded`: tags already excluded by the builtin or operational layer (the canary layer is the state).
    """

    round_id: str
    round_ts: datetime
    model: str
    statuses: Mapping[str, RoundStatus]
    discovered: tuple[str, ...] = ()
    excluded: Mapping[str, Layer] = field(default_factory=dict)


def action_for(action: Action, mode: Mode) -> Action:
    """The name a decision carries in `mode` (suspend -> would_suspend in observe mode, ...)."""
    return _SHADOW_ACTIONS.get(action, action) if mode is Mode.OBSERVE else action


def _utc(ts: datetime) -> datetime:
    if ts.tzinfo is None:
        raise ValueError(f"policy needs timezone-aware datetimes (got {ts!r})")
    return ts.astimezone(UTC)


def _decision(
    st: EndpointState, action: Action, at: datetime, *, ladder_step: int, reason: str,
    until: datetime | None = None, evidence_round_ids: tuple[str, ...] = (), round_id: str | None = None,
    actor: str = "canary",
) -> Decision:
    return Decision(at=at, model=st.model, tag=st.tag, action=action_for(action, st.mode), mode=st.mode,
                    ladder_step=ladder_step, until=until, reason=reason,
                    evidence_round_ids=evidence_round_ids, round_id=round_id, actor=actor)


# -- rule 1: expiry ---------------------------------------------------------------------------------------
def expire(st: EndpointState, rnd: RoundInput) -> tuple[EndpointState, list[Decision]]:
    """Suspended and round_ts >= suspended_until -> expire; the streaks carry on."""
    ts = _utc(rnd.round_ts)
    if st.suspended_until is None or ts < st.suspended_until:
        return st, []
    new = replace(st, suspended_until=None, suspended_at=None, last_suspension_end=ts)
    return new, [_decision(st, Action.EXPIRE, ts, ladder_step=st.ladder_step, until=st.suspended_until,
                           reason="suspension ran out", round_id=rnd.round_id)]


# -- rules 2 and 3: streaks -------------------------------------------------------------------------------
def counts(st: EndpointState, status: RoundStatus, round_ts: datetime, cfg: PolicyConfig) -> bool:
    """Whether a fail or clean round at `round_ts` grows the endpoint's streak of that status: a round that
    starts a streak always does; one that continues it only `round_spacing` or more after the round that last
    grew it (a streak of unknown time, stored before the rule, counts as far enough)."""
    running = st.fail_streak if status is RoundStatus.FAIL else st.clean_streak
    if running == 0 or st.streak_at is None:
        return True
    return _utc(round_ts) - st.streak_at >= cfg.round_spacing


def too_soon(states: Mapping[str, EndpointState], statuses: Mapping[str, RoundStatus], round_ts: datetime,
             cfg: PolicyConfig) -> tuple[str, ...]:
    """The tags whose fail or clean status this round does not count (`counts`), for the shell to say so."""
    return tuple(t for t, status in sorted(statuses.items())
                 if status in (RoundStatus.FAIL, RoundStatus.CLEAN) and t in states
                 and not counts(states[t], status, round_ts, cfg))


def apply_status(st: EndpointState, status: RoundStatus | None, rnd: RoundInput, cfg: PolicyConfig
                 ) -> EndpointState:
    """fail/clean move the streaks; transport, inconclusive and absence (None) freeze them, and so does a
    round of the streak's own status that comes too soon after the one that last grew it (`counts`).
    A round of the other status always counts: it breaks the streak however soon it comes.

    The evidence tuples keep the round ids of the last `fail_rounds` / `restore_rounds` rounds of the streak.
    A clean round ends a floor_blocked episode.
    """
    if status not in (RoundStatus.FAIL, RoundStatus.CLEAN) or not counts(st, status, rnd.round_ts, cfg):
        return st
    ts = _utc(rnd.round_ts)
    if status is RoundStatus.FAIL:
        return replace(st, fail_streak=st.fail_streak + 1, clean_streak=0, streak_at=ts,
                       fail_rounds=(*st.fail_rounds, rnd.round_id)[-cfg.fail_rounds:], clean_rounds=())
    return replace(st, clean_streak=st.clean_streak + 1, fail_streak=0, floor_blocked=False, streak_at=ts,
                   clean_rounds=(*st.clean_rounds, rnd.round_id)[-cfg.restore_rounds:], fail_rounds=())


# -- rules 4 and 5: suspension, floor, ladder -------------------------------------------------------------
def effective_ladder_step(st: EndpointState, now: datetime, cfg: PolicyConfig) -> int:
    """The ladder step the last suspension used, or 0 once `ladder_decay` has passed since it ended."""
    if st.is_suspended or st.last_suspension_end is None:
        return st.ladder_step
    return 0 if _utc(now) - st.last_suspension_end >= cfg.ladder_decay else st.ladder_step


def suspension_length(step: int, cfg: PolicyConfig) -> timedelta:
    """Ladder step (1-based) -> length; the last rung repeats."""
    return cfg.ladder[min(step, len(cfg.ladder)) - 1]


def routable_others(states: Mapping[str, EndpointState], tag: str, rnd: RoundInput) -> int:
    """Endpoints discovered this round, excluded by no layer (builtin, operational, canary), minus `tag`."""
    discovered = set(rnd.discovered) | set(rnd.statuses)
    return sum(
        1
        for t in discovered
        if t != tag and t not in rnd.excluded and not (t in states and states[t].is_suspended)
    )


def suspend_or_block(states: Mapping[str, EndpointState], tag: str, rnd: RoundInput, cfg: PolicyConfig
                     ) -> tuple[EndpointState, list[Decision]]:
    """Not suspended and fail_streak >= fail_rounds -> suspend, or floor_blocked once per episode."""
    st = states[tag]
    if st.is_suspended or st.fail_streak < cfg.fail_rounds:
        return st, []
    ts = _utc(rnd.round_ts)
    others = routable_others(states, tag, rnd)
    if others < cfg.min_hosts:
        if st.floor_blocked:
            return st, []
        reason = f"floor: {others} other routable endpoint(s) < min_hosts {cfg.min_hosts}"
        return replace(st, floor_blocked=True), [
            _decision(st, Action.FLOOR_BLOCKED, ts, ladder_step=st.ladder_step, reason=reason,
                      evidence_round_ids=st.fail_rounds, round_id=rnd.round_id)
        ]
    step = effective_ladder_step(st, ts, cfg) + 1
    until = ts + suspension_length(step, cfg)
    new = replace(st, fail_streak=0, clean_streak=0, fail_rounds=(), clean_rounds=(), floor_blocked=False,
                  streak_at=None, suspended_until=until, suspended_at=ts, ladder_step=step)
    reason = f"failed {st.fail_streak} rounds in a row (fail_rounds {cfg.fail_rounds})"
    return new, [_decision(st, Action.SUSPEND, ts, ladder_step=step, until=until, reason=reason,
                           evidence_round_ids=st.fail_rounds, round_id=rnd.round_id)]


# -- rule 6: early restore --------------------------------------------------------------------------------
def restore(st: EndpointState, rnd: RoundInput, cfg: PolicyConfig) -> tuple[EndpointState, list[Decision]]:
    """Suspended and clean_streak >= restore_rounds -> restore; the streaks carry on."""
    if not st.is_suspended or st.clean_streak < cfg.restore_rounds:
        return st, []
    ts = _utc(rnd.round_ts)
    new = replace(st, suspended_until=None, suspended_at=None, last_suspension_end=ts)
    reason = f"{st.clean_streak} clean rounds in a row (restore_rounds {cfg.restore_rounds})"
    return new, [_decision(st, Action.RESTORE, ts, ladder_step=st.ladder_step, until=st.suspended_until,
                           reason=reason, evidence_round_ids=st.clean_rounds, round_id=rnd.round_id)]


# -- rule 7: lift -----------------------------------------------------------------------------------------
def lift(states: Mapping[str, EndpointState], tag: str, now: datetime, who: str, reason: str,
         cfg: PolicyConfig) -> tuple[dict[str, EndpointState], list[Decision]]:
    """An admin ends a suspension at once. Not suspended (or unknown tag) -> no change, no decision.

    The lift spends both streaks: the admin's judgement replaces the evidence gathered during the
    suspension, so the endpoint is not re-suspended by the next round on old failures.
    """
    out = dict(states)
    st = out.get(tag)
    if st is None or not st.is_suspended:
        return out, []
    ts = _utc(now)
    out[tag] = replace(st, suspended_until=None, suspended_at=None, last_suspension_end=ts, fail_streak=0,
                       clean_streak=0, fail_rounds=(), clean_rounds=(), floor_blocked=False, streak_at=None)
    return out, [_decision(st, Action.LIFT, ts, ladder_step=st.ladder_step, until=st.suspended_until,
                           reason=reason, actor=who)]


# -- mode switch ------------------------------------------------------------------------------------------
def carry_over(states: Mapping[str, EndpointState], mode: Mode, now: datetime
               ) -> tuple[dict[str, EndpointState], list[Decision]]:
    """Seed `mode`'s states from states of the other mode: streaks, evidence and ladder history carry on,
    an active suspension does not (a shadow suspension never turns real, a real one is released when the
    canary is switched to observe). Each dropped suspension yields a lift (actor "mode-switch")."""
    ts = _utc(now)
    out: dict[str, EndpointState] = {}
    decisions: list[Decision] = []
    for tag in sorted(states):
        st = states[tag]
        if st.mode is mode:
            out[tag] = st
            continue
        out[tag] = replace(st, mode=mode, suspended_until=None, suspended_at=None, floor_blocked=False,
                           last_suspension_end=ts if st.is_suspended else st.last_suspension_end)
        if st.is_suspended:
            decisions.append(_decision(st, Action.LIFT, ts, ladder_step=st.ladder_step,
                                       until=st.suspended_until, actor="mode-switch",
                                       reason=f"mode switched to {mode}; suspension not carried over"))
    return out, decisions


# -- one round --------------------------------------------------------------------------------------------
def decide(states: Mapping[str, EndpointState], rnd: RoundInput, cfg: PolicyConfig
           ) -> tuple[dict[str, EndpointState], list[Decision]]:
    """Apply one round of one model to the states of that model (keyed by tag); see the module docstring."""
    ts = _utc(rnd.round_ts)
    tags = sorted(set(states) | set(rnd.statuses) | set(rnd.discovered))
    work: dict[str, EndpointState] = {
        t: states.get(t) or EndpointState(model=rnd.model, tag=t, mode=cfg.mode) for t in tags
    }
    work, decisions = carry_over(work, cfg.mode, ts)
    for tag in tags:  # rule 1
        work[tag], made = expire(work[tag], rnd)
        decisions += made
    for tag in tags:  # rules 2 and 3
        work[tag] = apply_status(work[tag], rnd.statuses.get(tag), rnd, cfg)
    for tag in tags:  # rule 6
        work[tag], made = restore(work[tag], rnd, cfg)
        decisions += made
    for tag in tags:  # rules 4 and 5, in tag order: the floor sees the suspensions made before
        work[tag], made = suspend_or_block(work, tag, rnd, cfg)
        decisions += made
    return work, decisions
