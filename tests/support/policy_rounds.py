"""The quarantine policy tests' common rounds (tests/unit/test_policy*.py): a history is written as one string per tag,
one character per round (30 minutes apart from T0): F fail, C clean, T transport, I inconclusive, "." discovered but
no status, "-" not discovered at all."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from tasks.core.policy import PolicyConfig, RoundInput, decide
from tasks.core.types import Decision, EndpointState, Layer, Mode, RoundStatus

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


def suspended_x(until: datetime = T0, step: int = 1, **kw: object) -> EndpointState:
    return st(suspended_until=until, suspended_at=until - DAY, ladder_step=step, **kw)
