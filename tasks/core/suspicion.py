"""Suspicion (pure): signals that bring a confirmation round forward, never a verdict (docs/design.md "Suspicion").

Two signals, per endpoint of a model:

* **live traffic**: the router's counts (tasks/core/live_records.py) over the last `window_s` seconds, and
  never from before the endpoint's previous suspicion (that evidence is spent). At least `min_requests`
  counted requests (429s are left out, as OpenRouter's uptime leaves them out) with a failure share of at
  least `failure_rate` is a suspicion. A request whose endpoint is known only by its provider name counts
  for every tag of that provider in the model's listing (a suspicion is cheap; the probes tell them apart).
* **OpenRouter's uptime**: the listing's most recent uptime (`uptime_last_5m`, else `uptime_last_30m`) at
  least `uptime_drop` percentage points below its day (`uptime_last_1d`; 100 when the day is null) is a
  suspicion. A null recent uptime (too little data) is none. `status`, latency and throughput are shown,
  never a trigger (the meaning of each negative status is not documented).

A suspicion is not raised for an endpoint that is already out of traffic (suspended, real or shadow, or on
the ignore list) or suspected less than `cooldown_s` ago. It asks for a **confirmation round** of that
endpoint (every probed contract, pinned; with the refusal controls) as soon as the watcher sees it, within
`suspect_confirm_after_s`. That round is an ordinary partial round: only its pinned probes count, under the
policy (two consecutive failing rounds, the floor, observe/enforce, the budget). `resolution` reads what the
probes said; a suspicion they do not confirm is recorded and changes nothing.

    found = suspect(model, counts, endpoints, states, ignore, last_suspected, rules, now)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from tasks.core.exclusions import matches
from tasks.core.live_records import LiveCount, LiveOutcome
from tasks.core.types import Endpoint, EndpointState, IgnoreList, RoundStatus

if TYPE_CHECKING:
    from tasks.config import CanaryConfig

__all__ = [
    "LiveTally",
    "Signal",
    "Suspicion",
    "SuspicionRules",
    "SuspicionStatus",
    "live_suspicion",
    "resolution",
    "rules_of",
    "suspect",
    "tally",
    "uptime_suspicion",
]


class Signal(StrEnum):
    LIVE_FAILURE_RATE = "live_failure_rate"
    UPTIME_DROP = "uptime_drop"


class SuspicionStatus(StrEnum):
    """A suspicion's life: `scheduled` until its confirmation round lands, then what the probes said."""

    SCHEDULED = "scheduled"
    CONFIRMED = "confirmed"  # the pinned probes failed the endpoint: its fail streak moved
    CLEARED = "cleared"  # the probes found it clean: nothing changes (the clean round counts as any round)
    UNCONFIRMED = "unconfirmed"  # transport or inconclusive: streaks frozen, nothing changes
    SKIPPED = "skipped"  # no round was run (over budget, the round could not be scheduled): nothing changes


@dataclass(frozen=True, slots=True)
class SuspicionRules:
    window_s: float
    min_requests: int
    failure_rate: float
    uptime_drop: float
    cooldown_s: float


def rules_of(cfg: CanaryConfig) -> SuspicionRules:
    return SuspicionRules(cfg.suspect_window_s, cfg.suspect_min_requests, cfg.suspect_failure_rate,
                          cfg.suspect_uptime_drop, cfg.suspect_cooldown_s)


@dataclass(frozen=True, slots=True)
class LiveTally:
    """One endpoint's live traffic in the window: counted requests, failures, and failures per outcome."""

    tag: str
    requests: int
    failures: int
    by_outcome: tuple[tuple[str, int], ...] = ()

    @property
    def rate(self) -> float:
        return self.failures / self.requests if self.requests else 0.0


@dataclass(frozen=True, slots=True)
class Suspicion:
    """A trigger with its evidence: which signal, which counts (a row of `suspicions`)."""

    model: str
    tag: str
    signal: Signal
    detected_at: datetime
    evidence: str
    requests: int | None = None
    failures: int | None = None
    failure_rate: float | None = None
    uptime_recent: float | None = None
    uptime_baseline: float | None = None

    @property
    def suspicion_id(self) -> str:
        return f"{self.model}|{self.tag}|{self.signal}|{self.detected_at.isoformat()}"


def tally(counts: Iterable[LiveCount], endpoints: Sequence[Endpoint], *, since: Mapping[str, datetime],
          until: datetime) -> dict[str, LiveTally]:
    """Per tag of `endpoints`, the counts in [since[tag], until): a count names its tag, else its provider
    name stands for every tag of that provider. Tags not listed are left out."""
    listed = {e.tag for e in endpoints}
    by_provider: dict[str, list[str]] = {}
    for e in endpoints:
        by_provider.setdefault(e.provider_name, []).append(e.tag)
    sums: dict[str, dict[str, int]] = {}
    for c in counts:
        if c.quality is not None or not c.outcome.is_counted or c.minute_at >= until:
            continue  # judged-answer rows are not attempts
        tags = [c.tag] if c.tag in listed else [] if c.tag else by_provider.get(c.provider_name or "", [])
        for tag in tags:
            start = since.get(tag)
            if start is not None and c.minute_at < start:
                continue
            sums.setdefault(tag, {})
            sums[tag][c.outcome.value] = sums[tag].get(c.outcome.value, 0) + c.requests
    out = {}
    for tag, outcomes in sorted(sums.items()):
        failures = sum(n for o, n in outcomes.items() if LiveOutcome(o).is_failure)
        out[tag] = LiveTally(tag, sum(outcomes.values()), failures,
                             tuple(sorted((o, n) for o, n in outcomes.items() if LiveOutcome(o).is_failure)))
    return out


def live_suspicion(model: str, t: LiveTally, rules: SuspicionRules, now: datetime) -> Suspicion | None:
    """A suspicion when at least `min_requests` requests failed at `failure_rate` or more."""
    if t.requests < max(1, rules.min_requests) or t.rate < rules.failure_rate:
        return None
    detail = ", ".join(f"{o} {n}" for o, n in t.by_outcome)
    evidence = (f"live failures {t.failures}/{t.requests} ({t.rate:.0%}) >= suspect_failure_rate "
                f"{rules.failure_rate:.0%} in {rules.window_s:g} s ({detail})")
    return Suspicion(model, t.tag, Signal.LIVE_FAILURE_RATE, now, evidence, requests=t.requests,
                     failures=t.failures, failure_rate=round(t.rate, 4))


def uptime_suspicion(e: Endpoint, rules: SuspicionRules, now: datetime) -> Suspicion | None:
    """A suspicion when the listing's recent uptime is `uptime_drop` points or more below its day."""
    recent, which = (e.uptime_last_5m, "uptime_last_5m") if e.uptime_last_5m is not None \
        else (e.uptime_last_30m, "uptime_last_30m")
    if recent is None or rules.uptime_drop <= 0:
        return None
    baseline = e.uptime_last_1d if e.uptime_last_1d is not None else 100.0
    if baseline - recent < rules.uptime_drop:
        return None
    evidence = (f"OpenRouter {which} ({recent:.1f} %) <= uptime_last_1d ({baseline:.1f} %) - suspect_uptime_drop "
                f"({rules.uptime_drop:g})" + (f"; status {e.status}" if e.status else ""))
    return Suspicion(e.model, e.tag, Signal.UPTIME_DROP, now, evidence, uptime_recent=recent,
                     uptime_baseline=baseline)


def in_traffic(tag: str, state: EndpointState | None, ignore: IgnoreList) -> bool:
    """Not suspended (real or shadow) and not on the ignore list: a suspicion about it can change something."""
    if state is not None and state.is_suspended:
        return False
    return not any(matches(item, tag) for item in ignore.ignore)


def suspect(
    model: str,
    counts: Iterable[LiveCount],
    endpoints: Sequence[Endpoint],
    states: Mapping[str, EndpointState],
    ignore: IgnoreList,
    last_suspected: Mapping[str, datetime],
    rules: SuspicionRules,
    now: datetime,
) -> list[Suspicion]:
    """The suspicions of `model` now, one per endpoint at most (live traffic first, then the uptime)."""
    window_start = now - timedelta(seconds=rules.window_s)
    since = {e.tag: max(window_start, last_suspected.get(e.tag, window_start)) for e in endpoints}
    tallies = tally(counts, endpoints, since=since, until=now + timedelta(minutes=1))
    found: list[Suspicion] = []
    for e in endpoints:
        last = last_suspected.get(e.tag)
        if last is not None and (now - last).total_seconds() < rules.cooldown_s:
            continue
        if not in_traffic(e.tag, states.get(e.tag), ignore):
            continue
        t = tallies.get(e.tag)
        hit = (live_suspicion(model, t, rules, now) if t is not None else None) or uptime_suspicion(e, rules, now)
        if hit is not None:
            found.append(hit)
    return found


def resolution(status: RoundStatus | None) -> SuspicionStatus:
    """What a suspicion became once its confirmation round judged the endpoint (None: it was not probed)."""
    if status is RoundStatus.FAIL:
        return SuspicionStatus.CONFIRMED
    if status is RoundStatus.CLEAN:
        return SuspicionStatus.CLEARED
    return SuspicionStatus.UNCONFIRMED
