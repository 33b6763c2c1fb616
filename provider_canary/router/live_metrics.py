"""The router's live counts as Prometheus counters: what `live_requests` holds, for a fleet of replicas whose
counts the canary reads through Prometheus (`live_source = "prometheus"`, tasks/core/live_promql.py).

    canary_router_live_attempts_total{model, tag, provider, outcome}
    canary_router_live_judged_total{model, tag, provider, quality, outcome}        outcome ok | quality_fail
    canary_router_live_quality_failures_total{model, tag, provider, quality, reason}

A sink of the attempt observer (provider_canary/router/attempts.py), beside `LiveRecorder`, counting the same things the
same way (`TierAttempt.live_outcome`, provider_canary/router/live.py `pinned_tag`): `model` is the canary model (the
tier's `canary_model`, else its `model`), `tag` the endpoint the tier pins ("" when none), `provider` the provider the
upstream reported, only when the tag is unknown (a pinned tier's series keep one name from the start).

Counters, never gauges: Prometheus's `increase` sums them over replicas and across restarts. Every tier's
series start at 0 when the router starts (`prime`), so the first failure of an endpoint is an increase
Prometheus sees (a series born at 1 has no increase to show), and a replica is visible to the canary before
its first request.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from provider_canary.router.attempts import JudgedAnswer, TierAttempt
from provider_canary.router.live import pinned_tag
from provider_canary.router.metric_children import Children
from provider_canary.router.routes import Routes, Tier
from tasks.core.live_promql import ATTEMPTS, JUDGED, LABELS, QUALITY_FAILURES
from tasks.core.live_records import LiveOutcome, LiveQuality

#: The outcomes of an attempt (judged answers have their own family).
ATTEMPT_OUTCOMES = tuple(o for o in LiveOutcome if o is not LiveOutcome.QUALITY_FAIL)
JUDGED_OUTCOMES = (LiveOutcome.OK, LiveOutcome.QUALITY_FAIL)


def _name(family: str) -> str:
    return family.removesuffix("_total")  # prometheus_client adds it back


def _model(tier: Tier) -> str:
    return tier.canary_model or tier.model


class LiveMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.attempts = Counter(_name(ATTEMPTS), "Attempts on upstream tiers per canary model, endpoint and outcome "
                                "(the live_requests counts; the canary's watcher reads their increase)",
                                LABELS[ATTEMPTS], registry=registry)
        self.answers = Counter(_name(JUDGED), "Answers the router passed and judged, per canary model, endpoint, "
                              "quality class and outcome (ok, quality_fail)", LABELS[JUDGED], registry=registry)
        self.failures = Counter(_name(QUALITY_FAILURES), "Judged answers that failed their check, per canary model, "
                                "endpoint, quality class and the canary's reason", LABELS[QUALITY_FAILURES],
                                registry=registry)
        # the children each request asks for, kept (provider_canary/router/metric_children.py)
        self._attempts, self._answers = Children(self.attempts), Children(self.answers)
        self._failures = Children(self.failures)

    @staticmethod
    def _endpoint(tier: Tier, provider: str | None) -> tuple[str, str, str]:
        tag = pinned_tag(tier)
        return _model(tier), tag or "", "" if tag else provider or ""

    def prime(self, routes: Routes, judge: bool) -> None:
        """Every tier's attempt series (and, with the judging on, its judged series) at 0."""
        for route in routes.routes:
            for tier in route.tiers:
                endpoint = self._endpoint(tier, None)
                for outcome in ATTEMPT_OUTCOMES:
                    self.attempts.labels(*endpoint, str(outcome))
                for quality in LiveQuality if judge else ():
                    for judged in JUDGED_OUTCOMES:
                        self.answers.labels(*endpoint, str(quality), str(judged))

    # -- the attempt observer's sink (provider_canary/router/attempts.py) ---------------------------------------------
    def attempt(self, a: TierAttempt) -> None:
        outcome = a.live_outcome
        if outcome is not None:
            self._attempts(*self._endpoint(a.tier, a.provider), outcome).inc()

    def judged(self, answer: JudgedAnswer) -> None:
        endpoint = self._endpoint(answer.tier, answer.provider)
        for v in answer.checks:
            outcome = LiveOutcome.OK if v.passed else LiveOutcome.QUALITY_FAIL
            self._answers(*endpoint, v.quality, outcome).inc()
            if not v.passed:
                self._failures(*endpoint, v.quality, v.reason).inc()
