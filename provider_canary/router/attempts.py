"""One place where an attempt is recorded: what happened on a tier, and the one observer every sink hangs on.

The walk over tiers (provider_canary/router/app.py `chat`) says what happened, once, as data:

    TierAttempt(stage, route, tier_no, reason, ...)   a tier skipped, given up, answered, committed, aborted, ended
    JudgedAnswer(route, tier_no, provider, checks)  what the judging said of an answer
    (provider_canary/router/answer.py)

and hands it to `AttemptObserver`, whose sinks each take what they need:

    sink                        stages it reads
    RouteEventLog (here)        skipped, failed_over, aborted           -> route events (JSONL, DuckDB) + a log line
    RouterMetrics (metrics.py)  failed_over, answered, committed,       -> Prometheus counters and histograms
                                aborted, judged answers
    LiveRecorder (live.py)      failed_over, answered, ended,           -> live_requests (the canary's suspicion)
                                judged answers
    CooldownBook (here)         failed_over with a Retry-After          -> the tier's cooldown
    CircuitBook (circuits.py)   every stage (breaker.result)           -> the tier's circuit breaker

A stream is committed (its first content chunk went out), then either aborted by the router (cut, stalled) or
not, then ended: its live count is taken at the end, with how it ended.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from provider_canary.router import records
from provider_canary.router import tiers as tier_rules
from provider_canary.router.reasons import Cause, FailoverReason
from provider_canary.router.route_events import Batcher
from provider_canary.router.routes import Route, Tier
from tasks.core.http_rules import parse_retry_after
from tasks.core.live_records import LiveOutcome
from tasks.core.types import RouteEvent
from tasks.runtime.clock import Clock

if TYPE_CHECKING:
    from provider_canary.router.answer import CheckResult

log = logging.getLogger("router")


class Stage(StrEnum):
    SKIPPED = "skipped"  # no request sent (the canary excluded every provider the tier pins)
    FAILED_OVER = "failed_over"  # given up before anything reached the client
    ANSWERED = "answered"  # a whole answer (or an error that is the request's) handed to the client
    HANDED_LATER = "handed_later"  # a held answer handed over after every later tier failed (counted already)
    COMMITTED = "committed"  # a stream's first content chunk went to the client
    ABORTED = "aborted"  # a committed stream the router ended with an error chunk
    ENDED = "ended"  # a committed stream ended (`reason`: why it did not end cleanly, else None)


@dataclass(frozen=True, slots=True)
class TierAttempt:
    stage: Stage
    route: Route
    tier_no: int
    reason: FailoverReason | None = None
    latency_ms: float = 0.0  # from sending to the failure, the answer or the first content chunk
    provider: str | None = None  # the provider the upstream reported
    retry_after: str | None = None  # the raw Retry-After header of a failure
    status: int | None = None  # HTTP status of an answer handed over
    client_model: str | None = None  # the model name the client asked for
    client: str = ""  # the client's name (provider_canary/router/access.py), "" when anonymous
    trial: bool = False  # this request is the tier's half-open circuit trial (provider_canary/router/breaker.py)
    opened_by: FailoverReason | None = None  # a skip of an open circuit: the failure it counts as (breaker.py)

    @property
    def tier(self) -> Tier:
        return self.route.tiers[self.tier_no - 1]

    @property
    def live_outcome(self) -> LiveOutcome | None:
        """What this counts as in `live_requests`; None: not counted (a skip of a tier the canary excluded, a
        commit whose end is counted, an answer that is about the request, a held answer counted when it failed
        over). A skip of an open circuit counts as the failure that opened it (provider_canary/router/breaker.py)."""
        if self.stage is Stage.FAILED_OVER and self.reason is not None:
            return self.reason.live_outcome
        if self.stage is Stage.SKIPPED and self.opened_by is not None:  # an open circuit: still evidence
            return self.opened_by.live_outcome
        if self.stage is Stage.ANSWERED:
            return LiveOutcome.OK if self.status == 200 else None
        if self.stage is Stage.ENDED:
            return self.reason.live_outcome if self.reason is not None else LiveOutcome.OK
        return None

    @property
    def live_word(self) -> str | None:
        """`live_requests.reason`: the upstream's own word, or `circuit_open` for a skip counted as evidence."""
        if self.stage is Stage.SKIPPED and self.opened_by is not None:
            return Cause.CIRCUIT_OPEN.value
        return self.reason.upstream_word if self.reason is not None else None


@dataclass(frozen=True, slots=True)
class JudgedAnswer:
    route: Route
    tier_no: int
    provider: str | None
    checks: tuple[CheckResult, ...]

    @property
    def tier(self) -> Tier:
        return self.route.tiers[self.tier_no - 1]


class AttemptSink(Protocol):
    def attempt(self, attempt: TierAttempt) -> None: ...

    def judged(self, answer: JudgedAnswer) -> None: ...


class AttemptObserver:
    """Hands every attempt and judged answer to each sink, in order; a sink never blocks (they buffer)."""

    def __init__(self, sinks: Sequence[AttemptSink]) -> None:
        self.sinks = list(sinks)

    def attempt(self, attempt: TierAttempt) -> None:
        for sink in self.sinks:
            sink.attempt(attempt)

    def judged(self, answer: JudgedAnswer) -> None:
        for sink in self.sinks:
            sink.judged(answer)


class RouteEventLog:
    """Skips, failovers and aborts as route events (provider_canary/router/ROUTES.md "Route events"), with a warning
    line."""

    _STAGES = frozenset({Stage.SKIPPED, Stage.FAILED_OVER, Stage.ABORTED})

    def __init__(self, clock: Clock, batchers: Sequence[Batcher[RouteEvent]]) -> None:
        self.clock = clock
        self.batchers = list(batchers)

    def attempt(self, attempt: TierAttempt) -> None:
        if attempt.stage not in self._STAGES or attempt.reason is None:
            return
        if attempt.reason.cause is Cause.CIRCUIT_OPEN:  # one event when it opened, not one per request skipped
            return
        reason = str(attempt.reason)
        event = records.route_event(self.clock.now(), attempt.route, attempt.tier_no, reason, attempt.latency_ms,
                                    attempt.client_model, attempt.client or None)
        log.warning("route %s tier %d degraded: %s (%.0f ms)%s", attempt.route.key, attempt.tier_no, reason,
                    attempt.latency_ms, f" client {attempt.client}" if attempt.client else "")
        for batcher in self.batchers:
            batcher.add([event])

    def judged(self, answer: JudgedAnswer) -> None:
        pass


class CooldownBook:
    """The upstreams cooling down after a Retry-After (provider_canary/router/tiers.py holds the rules)."""

    def __init__(self, clock: Clock, max_cooldown_s: float) -> None:
        self.clock = clock
        self.max_cooldown_s = max_cooldown_s
        self.cooldowns: tier_rules.Cooldowns = tier_rules.EMPTY_COOLDOWNS

    def attempt(self, attempt: TierAttempt) -> None:
        if attempt.stage is not Stage.FAILED_OVER or attempt.reason is None or not attempt.reason.cools_down:
            return
        seconds = parse_retry_after(attempt.retry_after, self.clock.now())
        self.cooldowns = tier_rules.cool_down(self.cooldowns, attempt.tier.upstream_id, self.clock.monotonic(),
                                              seconds, self.max_cooldown_s)

    def judged(self, answer: JudgedAnswer) -> None:
        pass

    def prune(self) -> tier_rules.Cooldowns:
        self.cooldowns = tier_rules.prune(self.cooldowns, self.clock.monotonic())
        return self.cooldowns
