"""The router's circuits: one per upstream (base URL + model + preferences + key variable, like its Retry-After
cooldown: routes sharing an upstream share its circuit), kept by `CircuitBook`, a sink of the attempt observer
(provider_canary/router/attempts.py). The rules are provider_canary/router/breaker.py's; this module holds the state,
the clock, and what each open and close leaves behind: a route event (`circuit_opened`, `circuit_closed`) and a log
line.

    book.blocked(tier)        the walk's plan: is this tier out of reach now (open, or its trial in flight)?
    book.admit(tier)          just before sending: TRY, TRIAL (this request is the trial) or SKIP
    book.release(tier)        a trial that ended without an outcome (its client left)
    book.attempt(attempt)     the observer: every attempt's score moves its circuit
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from provider_canary.router import breaker, records
from provider_canary.router.attempts import JudgedAnswer, TierAttempt
from provider_canary.router.breaker import Admission, Change, Circuit, Policy
from provider_canary.router.reasons import Cause, FailoverReason
from provider_canary.router.route_events import Batcher
from provider_canary.router.routes import Routes, Tier
from tasks.core.types import RouteEvent
from tasks.runtime.clock import Clock

log = logging.getLogger("router")


class CircuitBook:
    def __init__(self, clock: Clock, policy: Policy, events: Sequence[Batcher[RouteEvent]] = ()) -> None:
        self.clock = clock
        self.policy = policy
        self.events = list(events)
        self.circuits: dict[str, Circuit] = {}

    def _get(self, tier: Tier) -> Circuit:
        return self.circuits.get(tier.upstream_id, breaker.CLOSED)

    def _put(self, tier: Tier, circuit: Circuit) -> None:
        if circuit is breaker.CLOSED or circuit == breaker.CLOSED:  # `is`: the usual case, without a field compare
            self.circuits.pop(tier.upstream_id, None)
        else:
            self.circuits[tier.upstream_id] = circuit

    def blocked(self, tier: Tier) -> bool:
        return breaker.is_blocked(self._get(tier), self.clock.monotonic(), self.policy)

    def admit(self, tier: Tier) -> Admission:
        circuit, admission = breaker.admit(self._get(tier), self.clock.monotonic(), self.policy)
        self._put(tier, circuit)
        return admission

    def release(self, tier: Tier) -> None:
        self._put(tier, breaker.release(self._get(tier)))

    def opened_by(self, tier: Tier) -> tuple[FailoverReason | None, str | None]:
        """The last failure of this tier's circuit and the provider that failed it: what a skip counts as."""
        circuit = self._get(tier)
        return circuit.last_reason, circuit.last_provider

    def remaining_s(self, tier: Tier) -> float | None:
        """Seconds until this tier takes a trial (None: it takes requests now)."""
        return breaker.remaining_s(self._get(tier), self.clock.monotonic())

    def wait_s(self, tiers: Sequence[Tier], cooldowns: Mapping[str, float]) -> float | None:
        """When every tier is cooling down (Retry-After: `cooldowns`, provider_canary/router/tiers.py) or its circuit is
        open: seconds until the first takes requests again (the client's Retry-After); None while one takes them now."""
        now, waits = self.clock.monotonic(), []
        for tier in tiers:
            wait = max(cooldowns.get(tier.upstream_id, now) - now, self.remaining_s(tier) or 0.0)
            if wait <= 0 and not self.blocked(tier):
                return None
            waits.append(wait)
        return min(waits, default=None)

    # -- the attempt observer's sink ------------------------------------------------------------------
    def attempt(self, a: TierAttempt) -> None:
        if not self.policy.enabled:
            return
        score = breaker.score(a.stage.value, a.reason, a.status)
        now = self.clock.monotonic()
        circuit, change = breaker.record(self._get(a.tier), score, a.trial, now, self.policy, a.reason, a.provider)
        self._put(a.tier, circuit)
        if change is not None:
            self._changed(a, circuit, change)

    def judged(self, answer: JudgedAnswer) -> None:
        pass

    def _changed(self, a: TierAttempt, circuit: Circuit, change: Change) -> None:
        if change is Change.OPENED:
            seconds = (circuit.open_until or 0.0) - self.clock.monotonic()
            log.warning("route %s tier %d: circuit opened for %.0f s (%s; last failure: %s): requests skip this "
                        "tier until one trial request answers", a.route.key, a.tier_no, seconds,
                        f"its trial failed, open #{circuit.opens}" if circuit.opens > 1
                        else f"{circuit.fails} failures in a row", circuit.last_reason)
            cause = Cause.CIRCUIT_OPENED
        else:
            log.warning("route %s tier %d: circuit closed (its trial request answered)", a.route.key, a.tier_no)
            cause = Cause.CIRCUIT_CLOSED
        event = records.route_event(self.clock.now(), a.route, a.tier_no, cause.value, None, a.client_model)
        for batcher in self.events:
            batcher.add([event])

    # -- what /healthz and /metrics show --------------------------------------------------------------
    def open_tiers(self, routes: Routes) -> list[tuple[str, int, bool]]:
        """(route, tier number, open or half-open) of every tier of every route."""
        return [(route.key, i + 1, self._get(tier).is_open) for route in routes.routes
                for i, tier in enumerate(route.tiers)]

    def health(self, routes: Routes) -> list[dict[str, Any]]:
        """Each tier whose circuit is not closed, or that has failed since it last answered."""
        now = self.clock.monotonic()
        out = []
        for route in routes.routes:
            for i, tier in enumerate(route.tiers):
                c = self._get(tier)
                if c == breaker.CLOSED:
                    continue
                left = breaker.remaining_s(c, now)
                out.append({"route": route.key, "tier": i + 1, "state": c.state(now), "fails": c.fails,
                            "opens": c.opens, "open_for_s": round(left, 1) if left is not None else 0.0,
                            "last_reason": str(c.last_reason) if c.last_reason is not None else None})
        return out
