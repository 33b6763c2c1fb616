"""The router's live counters for a fleet (provider_canary/router/live_metrics.py): every tier's series exist at 0 from
the start (Prometheus sees a series born at 1 as no increase), attempts and judged answers are counted as
`live_requests` counts them, a pinned tier's series never carry a provider, and they are in the router's own registry
(/metrics)."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from provider_canary.router import reasons
from provider_canary.router.answer import CheckResult
from provider_canary.router.attempts import JudgedAnswer, Stage, TierAttempt
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.shell import build_shell
from tasks.core.live_records import LiveOutcome, LiveQuality

pytestmark = pytest.mark.unit

RAW = {"router": {"publish_dir": "/nonexistent/published"}, "route": [
    {"model": "chat", "tier": [
        {"base_url": "http://up/api/v1", "model": "acme/m", "provider": {"only": ["alpha"]}},
        {"base_url": "http://up/api/v1", "model": "acme/m-fast", "canary_model": "acme/m",
         "provider": {"order": ["beta", "gamma"]}}]}]}


def samples(registry: object) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()  # type: ignore[arg-type]
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples if s.name.startswith("canary_router_live")}


def test_every_tier_starts_at_zero_for_every_outcome_and_class() -> None:
    shell = build_shell(parse_routes(RAW), env={})
    found = samples(shell.metrics.registry)
    attempts = {dict(k)["outcome"] for (name, k), v in found.items()
                if name == "canary_router_live_attempts_total" and dict(k)["tag"] == "alpha" and v == 0}
    assert attempts == {str(o) for o in LiveOutcome} - {"quality_fail"}
    unpinned = {(dict(k)["tag"], dict(k)["provider"], dict(k)["model"]) for (name, k) in found
                if name == "canary_router_live_attempts_total"}
    assert unpinned == {("alpha", "", "acme/m"), ("", "", "acme/m")}  # the canary model, not the tier's
    judged = {(dict(k)["quality"], dict(k)["outcome"]) for (name, k), v in found.items()
              if name == "canary_router_live_judged_total" and dict(k)["tag"] == "alpha" and v == 0}
    assert judged == {(str(q), o) for q in LiveQuality for o in ("ok", "quality_fail")}
    off = build_shell(parse_routes({**RAW, "router": {**RAW["router"], "judge": False}}), env={})
    assert not [k for k in samples(off.metrics.registry) if k[0] == "canary_router_live_judged_total"]


def test_attempts_and_judged_answers_are_counted_as_the_table_counts_them() -> None:
    shell = build_shell(parse_routes(RAW), env={})
    route = shell.routes.routes[0]
    live = shell.metrics.live
    live.attempt(TierAttempt(Stage.FAILED_OVER, route, 1, reasons.fixed(reasons.Cause.EMPTY_ANSWER), provider="Alpha"))
    live.attempt(TierAttempt(Stage.FAILED_OVER, route, 2, reasons.http(503), provider="Gamma"))
    live.attempt(TierAttempt(Stage.COMMITTED, route, 2, provider="Beta"))  # counted at its end, not here
    live.attempt(TierAttempt(Stage.ENDED, route, 2, provider="Beta"))
    live.judged(JudgedAnswer(route, 2, "Beta", (CheckResult(LiveQuality.TOOLS, "schema_violation"),
                                                CheckResult(LiveQuality.EMPTY, "ok"))))
    found = {k: v for k, v in samples(shell.metrics.registry).items() if v}
    failed = str(reasons.fixed(reasons.Cause.EMPTY_ANSWER).live_outcome)
    assert found == {
        ("canary_router_live_attempts_total", (("model", "acme/m"), ("outcome", failed), ("provider", ""),
                                               ("tag", "alpha"))): 1.0,
        ("canary_router_live_attempts_total", (("model", "acme/m"), ("outcome", "http_5xx"), ("provider", "Gamma"),
                                               ("tag", ""))): 1.0,
        ("canary_router_live_attempts_total", (("model", "acme/m"), ("outcome", "ok"), ("provider", "Beta"),
                                               ("tag", ""))): 1.0,
        ("canary_router_live_judged_total", (("model", "acme/m"), ("outcome", "quality_fail"), ("provider", "Beta"),
                                             ("quality", "tools"), ("tag", ""))): 1.0,
        ("canary_router_live_judged_total", (("model", "acme/m"), ("outcome", "ok"), ("provider", "Beta"),
                                             ("quality", "empty"), ("tag", ""))): 1.0,
        ("canary_router_live_quality_failures_total", (("model", "acme/m"), ("provider", "Beta"),
                                                       ("quality", "tools"), ("reason", "schema_violation"),
                                                       ("tag", ""))): 1.0,
    }
