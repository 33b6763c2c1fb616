"""The router's Prometheus metrics (`GET /metrics`): requests, failovers, first content chunk, post-commit failures.

One `RouterMetrics` per router (its own registry: two routers in one test process do not share counters).
Labels are bounded: `route` is the routes-file key (`model:<name>` or `key:<sha256 prefix>`, never a secret),
`upstream` the tier's label (`base_url model [order=...]`, router/routes.py `Tier.label`), `tier` its number,
`reason` the failover reason the router itself names (connect, timeout, http_<status>, first_chunk_timeout...).

    canary_router_requests_total{route, upstream, outcome}      outcome: served | all_failed
    canary_router_failovers_total{route, tier, upstream, reason}    a tier given up before commit
    canary_router_first_chunk_seconds{route, upstream}          histogram: request sent -> first content chunk
    canary_router_stream_failures_after_commit_total{route, upstream, reason}
    canary_router_ignore_reloads_total                          ignore-list files parsed after a change
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from tasks.core.metric_rollup import GENAI_BUCKETS_S

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
disable_created_metrics()  # no `*_created` series beside each counter (Prometheus does not need them)


class _Reloads(Collector):
    def __init__(self, reads: Callable[[], int]) -> None:
        self._reads = reads

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("canary_router_ignore_reloads", "Ignore-list files parsed again after they "
                                  "changed on disk", value=self._reads())


class RouterMetrics:
    def __init__(self, ignore_reads: Callable[[], int] = lambda: 0) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("canary_router_requests", "Chat requests by the upstream that served them "
                                "(outcome served) or all_failed", ("route", "upstream", "outcome"),
                                registry=self.registry)
        self.failovers = Counter("canary_router_failovers", "Tiers given up before the first content chunk "
                                 "(the request moved on to the next tier)", ("route", "tier", "upstream", "reason"),
                                 registry=self.registry)
        self.first_chunk = Histogram("canary_router_first_chunk_seconds", "From sending the request upstream to "
                                     "its first content chunk (the commit point)", ("route", "upstream"),
                                     buckets=GENAI_BUCKETS_S, registry=self.registry)
        self.after_commit = Counter("canary_router_stream_failures_after_commit", "Streams that failed after "
                                    "the first content chunk was relayed (no failover is possible then)",
                                    ("route", "upstream", "reason"), registry=self.registry)
        self.registry.register(_Reloads(ignore_reads))

    def served(self, route: str, upstream: str, first_chunk_ms: float | None) -> None:
        self.requests.labels(route, upstream, "served").inc()
        if first_chunk_ms is not None:
            self.first_chunk.labels(route, upstream).observe(first_chunk_ms / 1000)

    def all_failed(self, route: str) -> None:
        self.requests.labels(route, "", "all_failed").inc()

    def failover(self, route: str, tier_no: int, upstream: str, reason: str) -> None:
        self.failovers.labels(route, str(tier_no), upstream, reason).inc()

    def failed_after_commit(self, route: str, upstream: str, reason: str) -> None:
        self.after_commit.labels(route, upstream, reason).inc()

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE)
