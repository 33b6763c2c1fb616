"""The router's Prometheus metrics (`GET /metrics`): requests, failovers, first content chunk, post-commit failures.

One `RouterMetrics` per router (its own registry: two routers in one test process do not share counters).
Labels are bounded: `route` is the routes-file key (`model:<name>` or `key:<sha256 prefix>`, never a secret),
`tier` its number, `server` the tier base URL's `host[:port]` (no scheme, path or credentials: `server_of`),
`model` the tier's model, `reason` the failover reason the router itself names (connect, timeout, http_<status>,
first_chunk_timeout...). The first-chunk histogram carries OpenTelemetry's GenAI name and attributes
(Prometheus spelling), like the canary's own probes' histogram.

    canary_router_requests_total{route, tier, server, model, outcome}    outcome: served | all_failed (no tier)
    canary_router_failovers_total{route, tier, server, model, reason}    a tier given up before commit
    gen_ai_client_operation_time_to_first_chunk_seconds{gen_ai_operation_name, gen_ai_provider_name,
        gen_ai_request_model, server_address, server_port, route, tier}   histogram: sent -> first content chunk
    canary_router_stream_failures_after_commit_total{route, tier, server, model, reason}
    canary_router_ignore_reloads_total                                   ignore-list files parsed after a change
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import httpx
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from tasks.core.metric_rollup import FIRST_CHUNK, GENAI_BUCKETS_S

if TYPE_CHECKING:
    from router.routes import Tier

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
disable_created_metrics()  # no `*_created` series beside each counter (Prometheus does not need them)
TIER_LABELS = ("route", "tier", "server", "model")
GENAI_LABELS = ("gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "server_address",
                "server_port", "route", "tier")


def server_of(base_url: str) -> str:
    """`host[:port]` of a base URL, the port only when the URL names one (`https://openrouter.ai/api/v1` ->
    `openrouter.ai`); never its credentials, path or query."""
    url = httpx.URL(base_url)
    return f"{url.host}:{url.port}" if url.port is not None else url.host


def _address_port(base_url: str) -> tuple[str, str]:
    """GenAI's `server.address` and `server.port` (the scheme's port when the URL names none)."""
    url = httpx.URL(base_url)
    port = url.port if url.port is not None else (443 if url.scheme == "https" else 80)
    return url.host, str(port)


class _Reloads(Collector):
    def __init__(self, reads: Callable[[], int]) -> None:
        self._reads = reads

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("canary_router_ignore_reloads", "Ignore-list files parsed again after they "
                                  "changed on disk", value=self._reads())


class RouterMetrics:
    def __init__(self, ignore_reads: Callable[[], int] = lambda: 0) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("canary_router_requests", "Chat requests by the tier that served them "
                                "(outcome served) or all_failed (every tier failed: no tier labels)",
                                (*TIER_LABELS, "outcome"), registry=self.registry)
        self.failovers = Counter("canary_router_failovers", "Tiers given up before the first content chunk "
                                 "(the request moved on to the next tier)", (*TIER_LABELS, "reason"),
                                 registry=self.registry)
        self.first_chunk = Histogram(FIRST_CHUNK, "GenAI time to the first chunk: from sending the request upstream "
                                     "to its first content chunk (the commit point)", GENAI_LABELS,
                                     buckets=GENAI_BUCKETS_S, registry=self.registry)
        self.after_commit = Counter("canary_router_stream_failures_after_commit", "Streams that failed after "
                                    "the first content chunk was relayed (no failover is possible then)",
                                    (*TIER_LABELS, "reason"), registry=self.registry)
        self.registry.register(_Reloads(ignore_reads))

    def served(self, route: str, tier_no: int, tier: Tier, first_chunk_ms: float | None) -> None:
        self.requests.labels(route, str(tier_no), server_of(tier.base_url), tier.model, "served").inc()
        if first_chunk_ms is not None:
            address, port = _address_port(tier.base_url)
            self.first_chunk.labels("chat", "openrouter", tier.model, address, port, route,
                                    str(tier_no)).observe(first_chunk_ms / 1000)

    def all_failed(self, route: str) -> None:
        self.requests.labels(route, "", "", "", "all_failed").inc()

    def failover(self, route: str, tier_no: int, tier: Tier, reason: str) -> None:
        self.failovers.labels(route, str(tier_no), server_of(tier.base_url), tier.model, reason).inc()

    def failed_after_commit(self, route: str, tier_no: int, tier: Tier, reason: str) -> None:
        self.after_commit.labels(route, str(tier_no), server_of(tier.base_url), tier.model, reason).inc()

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE)
