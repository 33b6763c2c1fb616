"""Hypothesis properties of the policy over random histories (h2-style: general behaviours, not cases).

A history is a list of rounds; each round gives every tag one of F C T I (a status), "." (discovered, no
status) or "-" (not discovered); rounds are separated by random gaps so that suspensions run out and the
ladder decays, and some are closer than the policy's `round_spacing` (confirm_after_min), so they do not count.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tasks.core.exclusions import merge_ignore_list
from tasks.core.policy import PolicyConfig, RoundInput, decide, lift
from tasks.core.replay import decision_line, replay
from tasks.core.types import Action, Decision, EndpointState, Layer, Mode, RoundStatus

pytestmark = pytest.mark.unit

M = "vendor/model"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TAGS = ("a", "b", "c", "d", "e")
CODES = {
    "F": RoundStatus.FAIL,
    "C": RoundStatus.CLEAN,
    "T": RoundStatus.TRANSPORT,
    "I": RoundStatus.INCONCLUSIVE,
}
GAPS = [timedelta(minutes=30), timedelta(hours=6), timedelta(days=1), timedelta(days=3), timedelta(days=15)]
#: Gaps around the default round spacing (5 min): too close to count, and exactly far enough.
CLOSE_GAPS = [timedelta(seconds=30), timedelta(minutes=4), timedelta(minutes=5)]
SPACINGS = [timedelta(0), timedelta(minutes=5)]
SUSPEND = {Action.SUSPEND, Action.WOULD_SUSPEND}
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class History:
    tags: tuple[str, ...]
    rounds: tuple[dict[str, str], ...]
    times: tuple[datetime, ...]
    excluded: dict[str, Layer]
    cfg: PolicyConfig

    def inputs(self) -> list[RoundInput]:
        return [
            RoundInput(
                round_id=f"r{i}",
                round_ts=ts,
                model=M,
                statuses={t: CODES[c] for t, c in col.items() if c in CODES},
                discovered=tuple(t for t, c in col.items() if c != "-"),
                excluded=self.excluded,
            )
            for i, (col, ts) in enumerate(zip(self.rounds, self.times, strict=True))
        ]

    def jsonl(self) -> list[str]:
        lines = [json.dumps({"model": M, "builtin": sorted(self.excluded)})]
        for col, ts in zip(self.rounds, self.times, strict=True):
            lines += [
                json.dumps({"round_ts": ts.isoformat(), "model": M, "tag": t, "status": CODES[c].value})
                for t, c in col.items()
                if c in CODES
            ]
        return lines


@st.composite
def histories(draw: st.DrawFn, mode: Mode | None = None, max_rounds: int = 40) -> History:
    tags = TAGS[: draw(st.integers(1, len(TAGS)))]
    column = st.fixed_dictionaries({t: st.sampled_from("FFCCTI.-") for t in tags})
    rounds = draw(st.lists(column, min_size=1, max_size=max_rounds))
    ts, times = T0, []
    for _ in rounds:
        ts += draw(st.sampled_from(GAPS + CLOSE_GAPS))
        times.append(ts)
    excluded = {t: Layer.BUILTIN for t in draw(st.sets(st.sampled_from(tags), max_size=2))}
    cfg = PolicyConfig(
        fail_rounds=draw(st.integers(1, 3)),
        restore_rounds=draw(st.integers(1, 3)),
        min_hosts=draw(st.integers(0, 3)),
        mode=mode or draw(st.sampled_from(list(Mode))),
        round_spacing=draw(st.sampled_from(SPACINGS)),
    )
    return History(tuple(tags), tuple(rounds), tuple(times), excluded, cfg)


def fold(
    h: History,
) -> list[tuple[RoundInput, dict[str, EndpointState], dict[str, EndpointState], list[Decision]]]:
    states: dict[str, EndpointState] = {}
    steps = []
    for rnd in h.inputs():
        after, made = decide(states, rnd, h.cfg)
        steps.append((rnd, states, after, made))
        states = after
    return steps


def routable(rnd: RoundInput, states: dict[str, EndpointState]) -> int:
    found = set(rnd.discovered) | set(rnd.statuses)
    return sum(1 for t in found if t not in rnd.excluded and not states[t].is_suspended)


@FAST
@given(histories())
def test_own_suspensions_never_break_the_floor(h: History) -> None:
    for rnd, _, after, made in fold(h):
        if any(d.action in SUSPEND for d in made):
            assert routable(rnd, after) >= h.cfg.min_hosts


@FAST
@given(histories())
def test_transport_inconclusive_and_absent_never_move_a_streak(h: History) -> None:
    for rnd, before, after, made in fold(h):
        suspended_now = {d.tag for d in made if d.action in SUSPEND}
        for tag in before:
            if (
                rnd.statuses.get(tag) in (None, RoundStatus.TRANSPORT, RoundStatus.INCONCLUSIVE)
                and tag not in suspended_now
            ):
                assert (after[tag].fail_streak, after[tag].clean_streak) == (
                    before[tag].fail_streak,
                    before[tag].clean_streak,
                )


@FAST
@given(histories())
def test_states_stay_valid(h: History) -> None:
    for rnd, _, after, _ in fold(h):
        for s in after.values():
            assert s.fail_streak >= 0 and s.clean_streak >= 0 and s.mode is h.cfg.mode
            assert min(s.fail_streak, s.clean_streak) == 0
            if s.is_suspended:
                assert s.suspended_until > rnd.round_ts and s.ladder_step >= 1  # type: ignore[operator]
                assert not s.floor_blocked
            elif s.fail_streak >= h.cfg.fail_rounds:
                assert s.floor_blocked  # over the threshold and routable: only the floor can explain it


@FAST
@given(
    fail_rounds=st.integers(1, 4),
    min_hosts=st.integers(0, 3),
    extra_hosts=st.integers(0, 2),
    noise=st.lists(st.sampled_from("TI.-"), max_size=6),
    seed=st.integers(0, 2**16),
)
def test_persistent_fault_suspended_in_exactly_fail_rounds_rounds(
    fail_rounds: int, min_hosts: int, extra_hosts: int, noise: list[str], seed: int
) -> None:
    cfg = PolicyConfig(fail_rounds=fail_rounds, min_hosts=min_hosts, mode=Mode.ENFORCE)
    pattern = ["F"] * (fail_rounds + 2) + noise
    random.Random(seed).shuffle(pattern[1:])  # noise anywhere after the first fail
    others = [f"ok{i}" for i in range(min_hosts + extra_hosts)]
    states: dict[str, EndpointState] = {}
    fails = 0
    for i, code in enumerate(pattern):
        col = {"x": code, **{t: "C" for t in others}}
        rnd = RoundInput(
            f"r{i}",
            T0 + i * GAPS[0],
            M,
            {t: CODES[c] for t, c in col.items() if c in CODES},
            tuple(t for t, c in col.items() if c != "-"),
        )
        states, made = decide(states, rnd, cfg)
        fails += code == "F"
        if fails < fail_rounds:
            assert made == []
        else:
            assert [(d.tag, d.action) for d in made] == [("x", Action.SUSPEND)]
            assert len(made[0].evidence_round_ids) == fail_rounds
            return
    raise AssertionError("never suspended")


@FAST
@given(histories())
def test_a_round_too_soon_after_its_streak_grew_moves_no_streak(h: History) -> None:
    for rnd, before, after, made in fold(h):
        suspended_now = {d.tag for d in made if d.action in SUSPEND}
        for tag, old in before.items():
            status = rnd.statuses.get(tag)
            running = {RoundStatus.FAIL: old.fail_streak, RoundStatus.CLEAN: old.clean_streak}.get(status, 0)
            if running and old.streak_at is not None and rnd.round_ts - old.streak_at < h.cfg.round_spacing:
                if tag not in suspended_now:
                    assert (after[tag].fail_streak, after[tag].clean_streak) == (old.fail_streak, old.clean_streak)
                    assert after[tag].streak_at == old.streak_at


@FAST
@given(histories())
def test_the_rounds_a_decision_rests_on_are_apart(h: History) -> None:
    at = {rnd.round_id: rnd.round_ts for rnd in h.inputs()}
    for *_, made in fold(h):
        for d in made:
            times = [at[r] for r in d.evidence_round_ids]
            assert all(b - a >= h.cfg.round_spacing for a, b in zip(times, times[1:], strict=False)), d


@FAST
@given(histories())
def test_without_spacing_every_fail_or_clean_round_moves_its_streak(h: History) -> None:
    h = replace(h, cfg=replace(h.cfg, round_spacing=timedelta(0)))
    for rnd, before, after, made in fold(h):
        suspended_now = {d.tag for d in made if d.action in SUSPEND}
        for tag, old in before.items():
            if tag in suspended_now:
                continue
            if rnd.statuses.get(tag) is RoundStatus.FAIL:
                assert after[tag].fail_streak == old.fail_streak + 1
            elif rnd.statuses.get(tag) is RoundStatus.CLEAN:
                assert after[tag].clean_streak == old.clean_streak + 1


@settings(max_examples=60, deadline=None)
@given(histories(max_rounds=25), st.randoms())
def test_replay_is_deterministic_and_ignores_line_order(h: History, rnd: random.Random) -> None:
    lines = h.jsonl()
    first = [decision_line(d) for d in replay(lines, h.cfg)]
    assert [decision_line(d) for d in replay(lines, h.cfg)] == first
    shuffled = lines[1:]
    rnd.shuffle(shuffled)
    assert [decision_line(d) for d in replay([lines[0], *shuffled], h.cfg)] == first
    # and the replay is the same fold the flow does (only rounds with a status exist in a replay)
    kept = [
        ({t: c for t, c in col.items() if c in CODES}, ts) for col, ts in zip(h.rounds, h.times, strict=True)
    ]
    kept = [(col, ts) for col, ts in kept if col]
    seen = replace(h, rounds=tuple(col for col, _ in kept), times=tuple(ts for _, ts in kept))
    direct = [d for *_, made in fold(seen) for d in made]
    assert [(decision_line(d)) for d in direct] == first


@FAST
@given(histories(mode=Mode.OBSERVE))
def test_observe_mode_never_reaches_the_ignore_list(h: History) -> None:
    for rnd, _, after, made in fold(h):
        assert merge_ignore_list(M, h.tags, [], [], after, rnd.round_ts).ignore == ()
        assert all(
            d.mode is Mode.OBSERVE and d.action not in (Action.SUSPEND, Action.RESTORE, Action.EXPIRE)
            for d in made
        )


@FAST
@given(histories(mode=Mode.ENFORCE))
def test_observe_decides_exactly_what_enforce_does(h: History) -> None:
    enforce = [d for *_, made in fold(h) for d in made]
    observe = [d for *_, made in fold(replace(h, cfg=replace(h.cfg, mode=Mode.OBSERVE))) for d in made]
    assert [
        replace(o, action=e.action, mode=e.mode) for o, e in zip(observe, enforce, strict=True)
    ] == enforce
    assert len(observe) == len(enforce)


class PolicyMachine(RuleBasedStateMachine):
    """Rounds and admin lifts interleaved, in either mode; invariants checked after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.cfg = PolicyConfig(mode=random.Random(0).choice(list(Mode)))
        self.states: dict[str, EndpointState] = {}
        self.now = T0
        self.last_mode: Mode | None = None  # the mode of the last round decided
        self.n = 0

    @rule(mode=st.sampled_from(list(Mode)))
    def switch_mode(self, mode: Mode) -> None:
        self.cfg = replace(self.cfg, mode=mode)

    @rule(
        col=st.fixed_dictionaries({t: st.sampled_from("FFCTI-") for t in TAGS[:4]}), gap=st.sampled_from(GAPS)
    )
    def play_round(self, col: dict[str, str], gap: timedelta) -> None:
        self.now += gap
        self.n += 1
        rnd = RoundInput(
            f"r{self.n}",
            self.now,
            M,
            {t: CODES[c] for t, c in col.items() if c in CODES},
            tuple(t for t, c in col.items() if c != "-"),
        )
        self.states, _ = decide(self.states, rnd, self.cfg)
        self.last_mode = self.cfg.mode

    @rule(tag=st.sampled_from(TAGS[:4]))
    def admin_lift(self, tag: str) -> None:
        was = self.states.get(tag)
        self.states, made = lift(self.states, tag, self.now, "admin", "test", self.cfg)
        assert len(made) == (1 if was is not None and was.is_suspended else 0)
        assert not self.states.get(tag, EndpointState(M, tag)).is_suspended

    @invariant()
    def ignore_list_only_holds_enforced_suspensions(self) -> None:
        ignore = merge_ignore_list(M, TAGS, [], [], self.states, self.now).ignore
        assert set(ignore) == {
            t
            for t, s in self.states.items()
            if s.mode is Mode.ENFORCE and s.is_suspended and s.suspended_until > self.now
        }
        if self.last_mode is Mode.OBSERVE:  # a round in observe mode released every real suspension
            assert ignore == ()


PolicyMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestPolicyMachine = pytest.mark.unit(PolicyMachine.TestCase)
