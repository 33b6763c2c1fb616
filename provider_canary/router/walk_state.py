"""One request's walk over its route's tiers, as data, and how what happened on a tier is said.

`Walk` is what a request carries from tier to tier (the failures so far, an answer held back, the circuit
trials it holds, how it ended); `Held` is a non-streamed answer kept in case no later tier does better.
`attempt` says what happened on a tier once, as a `TierAttempt` (provider_canary/router/attempts.py), to the one
observer that route events, metrics, live counts and cooldowns hang on; `finish` records the whole request's duration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from provider_canary.router.attempts import Stage, TierAttempt
from provider_canary.router.live import provider_in
from provider_canary.router.records import TierFailed
from provider_canary.router.request import Prepared
from provider_canary.router.shell import RouterShell
from provider_canary.router.upstream import Passthrough, TierFailure
from tasks.core.http_rules import parse_retry_after


@dataclass
class Held:
    """A non-streamed answer that is not the last word (empty, or failed its check): handed to the client
    only if no later tier does better."""

    tier_no: int
    result: Passthrough
    headers: dict[str, str]  # the response headers it goes out with
    failure: str  # `<class>:<reason>`, for the x-canary-check-failed header
    provider: str | None
    usage: tuple[int | None, int | None] = (None, None)


@dataclass
class Walk:
    """One request's walk over its route's tiers."""

    prepared: Prepared
    client_headers: Mapping[str, str]
    client: str = ""  # the client's name (provider_canary/router/access.py), "" when anonymous
    started: float = 0.0  # monotonic s when the request arrived
    failures: list[TierFailed] = field(default_factory=list)
    held: Held | None = None
    trials: set[int] = field(default_factory=set)  # tiers this request is the circuit trial of
    recorded: set[int] = field(default_factory=set)  # tiers an attempt was recorded for
    # how it ended, for the whole request's duration: the tier that answered, GenAI error.type, usage
    tier_no: int | None = None
    error_type: str = ""
    usage: tuple[int | None, int | None] = (None, None)

    def ended(self, tier_no: int | None, error_type: str = "",
              usage: tuple[int | None, int | None] = (None, None)) -> None:
        self.tier_no, self.error_type, self.usage = tier_no, error_type, usage


def attempt(shell: RouterShell, w: Walk, stage: Stage, tier_no: int, **fields: Any) -> None:
    """What happened on one tier, said once; a skip or a failover also joins the walk's failures."""
    said = TierAttempt(stage, w.prepared.route, tier_no, client_model=w.prepared.model, client=w.client,
                       trial=tier_no in w.trials, **fields)
    w.recorded.add(tier_no)
    shell.observer.attempt(said)
    if stage in (Stage.SKIPPED, Stage.FAILED_OVER) and said.reason is not None:
        wait = parse_retry_after(said.retry_after, shell.clock.now()) if said.retry_after else None
        w.failures.append(TierFailed(tier_no, said.reason, wait))


def failed_over(shell: RouterShell, w: Walk, tier_no: int, failure: TierFailure, provider: str | None = None) -> None:
    attempt(shell, w, Stage.FAILED_OVER, tier_no, reason=failure.reason, latency_ms=failure.latency_ms,
            provider=provider or failure.provider or provider_in(failure.detail), retry_after=failure.retry_after)


def finish(shell: RouterShell, w: Walk) -> None:
    """The whole request's duration (and the upstream's usage), once it ended."""
    route = w.prepared.route
    tier = route.tiers[w.tier_no - 1] if w.tier_no is not None else None
    shell.metrics.finished(route.key, w.tier_no, tier, w.error_type, shell.clock.monotonic() - w.started, w.usage)
