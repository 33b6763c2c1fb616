"""Suspicion (pure): signals that bring a confirmation round forward, never a verdict (docs/design.md "Suspicion").

Three signals, per endpoint of a model:

* **live attempts**: the router's counts of its attempts (tasks/core/live_records.py, rows without a quality
  class) over the last `window_s` seconds, and never from before the endpoint's previous suspicion (that
  evidence is spent). At least `min_requests` counted requests (429s are left out, as OpenRouter's uptime
  leaves them out) with a failure share of at least `failure_rate` is a suspicion. A request whose endpoint is
  known only by its provider name counts for every tag of that provider in the model's listing (a suspicion
  is cheap; the probes tell them apart).
* **live quality**: the answers the router judged (rows with a quality class: tools, structured, empty,
  encoding), per endpoint and class, over the same window. At least `min_requests` judged answers, a failure
  share of at least `failure_rate`, and *clearly above the peers*: at or above the reference rate +
  `peer_margin`. The reference is the higher of the peers' pooled rate (the same model's other endpoints'
  judged answers of the class in the window, when they hold at least `min_requests`: evidence a count that
  also stands for this endpoint never gives) and the rate the pinned probes last cleared on this endpoint for
  this class (within `CLEARED_RATE_KEEPS`). So a class every endpoint fails alike (a client's own schema)
  suspects no one; with no peer evidence (tier 1 takes all the traffic) the endpoint is suspected on its own
  rate, once: after the probes cleared it, only a rate clearly above the cleared one suspects it again.
* **OpenRouter's uptime**: the listing's most recent uptime (`uptime_last_5m`, else `uptime_last_30m`) at
  least `uptime_drop` percentage points below its day (`uptime_last_1d`; 100 when the day is null) is a
  suspicion. A null recent uptime (too little data) is none. `status`, latency and throughput are shown,
  never a trigger (the meaning of each negative status is not documented).

The first signal that fires wins, in that order (live quality may fire for several classes at once, a
suspicion each). A suspicion is not raised for an endpoint that is already out of traffic (suspended, real or
shadow, or on the ignore list) or suspected less than `cooldown_s` ago. It asks for a **confirmation round**
of that endpoint (`confirmation_request`: every probed contract; for a quality class only the contracts that
judge it, `QUALITY_CONTRACTS`; the refusal controls whenever refusal is probed) as soon as the watcher sees
it, within `suspect_confirm_after_s`. That round is an ordinary partial round: only its pinned probes count,
under the policy (two consecutive failing rounds, the floor, observe/enforce, the budget). `resolution` reads
what the probes said; a suspicion they do not confirm is recorded and changes nothing.

    found = suspect(model, counts, endpoints, states, ignore, last_suspected, rules, now, cleared)
    request = confirmation_request(model, found, listed_tags, controls, now)

The counts are summed per endpoint (and class) by tasks/core/live_tally.py.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from tasks.core.confirm import ConfirmationRequest, contracts_to_probe, with_refusal_controls
from tasks.core.contracts import probed
from tasks.core.exclusions import matches
from tasks.core.live_records import LiveCount, LiveQuality
from tasks.core.live_tally import LiveTally, QualityTally, quality_tally, tally
from tasks.core.types import Contract, Endpoint, EndpointState, IgnoreList, RoundStatus

if TYPE_CHECKING:
    from tasks.config import CanaryConfig

__all__ = [
    "CLEARED_RATE_KEEPS",
    "QUALITY_CONTRACTS",
    "ClearedRate",
    "Signal",
    "Suspicion",
    "SuspicionRules",
    "SuspicionStatus",
    "confirmation_request",
    "contracts_for",
    "live_suspicion",
    "quality_suspicion",
    "resolution",
    "rules_of",
    "suspect",
    "uptime_suspicion",
]


class Signal(StrEnum):
    LIVE_FAILURE_RATE = "live_failure_rate"
    LIVE_QUALITY = "live_quality"  # the router's judged answers of one quality class (`Suspicion.quality`)
    UPTIME_DROP = "uptime_drop"


#: The contracts a quality suspicion's confirmation round probes: those that judge the class (an unprobed one,
#: `opening`, is judged over the free-text contracts' replies, so those are probed: `contracts_to_probe`).
#: Encoding corruption is judged by the language detector and, at the reply's first characters, by `opening`.
QUALITY_CONTRACTS: Mapping[LiveQuality, tuple[str, ...]] = {
    LiveQuality.TOOLS: (Contract.TOOLS,),
    LiveQuality.STRUCTURED: (Contract.STRUCTURED,),
    LiveQuality.EMPTY: (Contract.REFUSAL,),
    LiveQuality.ENCODING: (Contract.LANGUAGE, Contract.OPENING),
}
#: How long the rate the pinned probes cleared stands in for the peers of an endpoint and class: a day, so a
#: client's lasting bug on a route with one endpoint costs one confirmation round a day per endpoint and
#: class, and a changed client (or a new fault) is looked at again the next day at the latest.
CLEARED_RATE_KEEPS = timedelta(days=1)


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
    peer_margin: float = 0.3


def rules_of(cfg: CanaryConfig) -> SuspicionRules:
    return SuspicionRules(cfg.suspect_window_s, cfg.suspect_min_requests, cfg.suspect_failure_rate,
                          cfg.suspect_uptime_drop, cfg.suspect_cooldown_s, cfg.suspect_peer_margin)


@dataclass(frozen=True, slots=True)
class ClearedRate:
    """The latest resolved quality suspicion of an endpoint and class, when its probes cleared it: the rate
    the pinned probes found to be the client's doing (tasks/store/live.py `cleared_rates`)."""

    detected_at: datetime
    failure_rate: float


@dataclass(frozen=True, slots=True)
class Suspicion:
    """A trigger with its evidence: which signal, which counts (a row of `suspicions`); `quality` the class of
    a live quality suspicion, `reference_rate` the rate it had to clear by `peer_margin`."""

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
    quality: LiveQuality | None = None
    reference_rate: float | None = None

    @property
    def suspicion_id(self) -> str:
        signal = f"{self.signal}:{self.quality}" if self.quality is not None else str(self.signal)
        return f"{self.model}|{self.tag}|{signal}|{self.detected_at.isoformat()}"


def live_suspicion(model: str, t: LiveTally, rules: SuspicionRules, now: datetime) -> Suspicion | None:
    """A suspicion when at least `min_requests` requests failed at `failure_rate` or more."""
    if t.requests < max(1, rules.min_requests) or t.rate < rules.failure_rate:
        return None
    detail = ", ".join(f"{o} {n}" for o, n in t.by_outcome)
    evidence = (f"live failures {t.failures}/{t.requests} ({t.rate:.0%}) >= suspect_failure_rate "
                f"{rules.failure_rate:.0%} in {rules.window_s:g} s ({detail})")
    return Suspicion(model, t.tag, Signal.LIVE_FAILURE_RATE, now, evidence, requests=t.requests,
                     failures=t.failures, failure_rate=round(t.rate, 4))


def quality_suspicion(model: str, t: QualityTally, cleared: ClearedRate | None, rules: SuspicionRules,
                      now: datetime) -> Suspicion | None:
    """A suspicion when at least `min_requests` judged answers of the class failed at `failure_rate` or more,
    and at the reference rate + `peer_margin` or more (the module docstring)."""
    minimum = max(1, rules.min_requests)
    if t.judged < minimum or t.rate < rules.failure_rate:
        return None
    peers = t.peer_rate if t.peer_judged >= minimum else None
    kept = cleared if cleared is not None and now - cleared.detected_at < CLEARED_RATE_KEEPS else None
    reference = max(peers or 0.0, kept.failure_rate if kept is not None else 0.0)
    if t.rate < reference + rules.peer_margin - 1e-9:
        return None
    said = [f"the peers' {t.peer_rate:.0%} ({t.peer_failures}/{t.peer_judged} on {t.peer_endpoints} endpoints)"
            if peers is not None else
            f"no peer evidence ({t.peer_judged} judged {t.quality} answers elsewhere < {minimum})"]
    if kept is not None:
        said.append(f"the {kept.failure_rate:.0%} the probes cleared at {kept.detected_at:%Y-%m-%dT%H:%M:%SZ}")
    detail = ", ".join(f"{r} {n}" for r, n in t.by_reason)
    evidence = (f"live {t.quality} answers failed {t.failures}/{t.judged} ({t.rate:.0%}) >= suspect_failure_rate "
                f"{rules.failure_rate:.0%} and >= {reference:.0%} + suspect_peer_margin {rules.peer_margin:g} "
                f"({'; '.join(said)}) in {rules.window_s:g} s ({detail})")
    return Suspicion(model, t.tag, Signal.LIVE_QUALITY, now, evidence, requests=t.judged, failures=t.failures,
                     failure_rate=round(t.rate, 4), quality=t.quality, reference_rate=round(reference, 4))


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
    cleared: Mapping[tuple[str, LiveQuality], ClearedRate] | None = None,
) -> list[Suspicion]:
    """The suspicions of `model` now: per endpoint, live attempts, else live quality (a suspicion per class
    that fires), else the uptime. `cleared`: per (tag, class), the rate the probes last cleared."""
    counts = list(counts)
    window_start = now - timedelta(seconds=rules.window_s)
    since = {e.tag: max(window_start, last_suspected.get(e.tag, window_start)) for e in endpoints}
    until = now + timedelta(minutes=1)
    tallies = tally(counts, endpoints, since=since, until=until)
    judged = quality_tally(counts, endpoints, since=since, window_start=window_start, until=until)
    found: list[Suspicion] = []
    for e in endpoints:
        last = last_suspected.get(e.tag)
        if last is not None and (now - last).total_seconds() < rules.cooldown_s:
            continue
        if not in_traffic(e.tag, states.get(e.tag), ignore):
            continue
        t = tallies.get(e.tag)
        hit = live_suspicion(model, t, rules, now) if t is not None else None
        if hit is not None:
            found.append(hit)
            continue
        quality = [q for q in (quality_suspicion(model, qt, (cleared or {}).get((e.tag, qt.quality)), rules, now)
                               for (tag, _), qt in judged.items() if tag == e.tag) if q is not None]
        if quality:
            found.extend(quality)
            continue
        hit = uptime_suspicion(e, rules, now)
        if hit is not None:
            found.append(hit)
    return found


def contracts_for(s: Suspicion) -> tuple[str, ...]:
    """What a suspicion's confirmation round probes on its endpoint: every probed contract, or for a quality
    class the contracts that judge it (`QUALITY_CONTRACTS`)."""
    if s.quality is None:
        return probed()
    return contracts_to_probe(QUALITY_CONTRACTS[s.quality])


def confirmation_request(model: str, found: Sequence[Suspicion], listed: Collection[str], controls: Sequence[str],
                         now: datetime) -> ConfirmationRequest:
    """One partial round of the suspected endpoints, due now: per endpoint the union of what its suspicions
    ask (`contracts_for`), and the refusal controls among `listed` whenever refusal is probed."""
    wanted: dict[str, set[str]] = {}
    for s in found:
        wanted.setdefault(s.tag, set()).update(contracts_for(s))
    plan = {tag: tuple(c for c in probed() if c in cs) for tag, cs in wanted.items()}
    plan = with_refusal_controls(plan, controls, listed)
    tags = "+".join(sorted(wanted))
    return ConfirmationRequest(model=model, confirms=f"suspicion:{tags}@{now:%Y-%m-%dT%H:%M:%SZ}", due=now,
                               contracts=dict(sorted(plan.items())))


def resolution(status: RoundStatus | None) -> SuspicionStatus:
    """What a suspicion became once its confirmation round judged the endpoint (None: it was not probed)."""
    if status is RoundStatus.FAIL:
        return SuspicionStatus.CONFIRMED
    if status is RoundStatus.CLEAN:
        return SuspicionStatus.CLEARED
    return SuspicionStatus.UNCONFIRMED
