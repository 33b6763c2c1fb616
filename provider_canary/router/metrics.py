"""The router's Prometheus metrics (`GET /metrics`): requests, failovers, first content chunk, post-commit failures.

One `RouterMetrics` per router (its own registry: two routers in one test process do not share counters).
Labels are bounded: `route` is the routes-file key (`model:<name>` or `key:<sha256 prefix>`, never a secret),
`tier` its number, `server` the tier base URL's `host[:port]` (no scheme, path or credentials: `server_of`),
`model` the tier's model, `reason` the failover reason the router itself names (connect, timeout, http_<status>,
first_chunk_timeout...). The first-chunk histogram carries OpenTelemetry's GenAI name and attributes
(Prometheus spelling), like the canary's own probes' histogram.

    canary_router_requests_total{route, tier, server, model, outcome}    outcome: served | all_failed (no tier)
                                                                     | router_overloaded (no free connection)
    canary_router_failovers_total{route, tier, server, model, reason}    a tier given up before commit
    gen_ai_client_operation_time_to_first_chunk_seconds{gen_ai_operation_name, gen_ai_provider_name,
        gen_ai_request_model, server_address, server_port, route, tier}   histogram: sent -> first content chunk
    canary_router_stream_failures_after_commit_total{route, tier, server, model, reason}
    canary_router_ignore_reloads_total                                   ignore-list files parsed after a change

The judging and the lists (`quality` the class, `reason` the canary's Reason value or why):

    canary_router_answers_judged_total{route, tier, server, model, quality, reason}    reason ok = the check held
    canary_router_answers_unjudged_total{reason}             queue_full (dropped, never waited for) | error
    canary_router_clients_gone_total{route}                  clients that left before the first content chunk
    canary_router_requests_refused_total{reason}             body_too_large, not_json, too_deep, not_object, no_route,
                                                             invalid_api_key, rate_limit_exceeded (the door's)
    canary_router_pending_on_disk                            live counts and route events kept on disk for DuckDB
    canary_router_ignore_list_present{route, tier, model}    1 when the tier's canary list exists, else 0
    canary_router_ignore_list_entries{route, tier, model}    tags in it
    canary_router_ignore_list_age_seconds{route, tier, model}   since the canary last wrote it (absent: missing)
    canary_router_ignore_list_stale{route, tier, model}      1 when older than two canary intervals
    canary_router_tier_open{route, tier}                     1 while the tier's circuit is open
    (provider_canary/router/breaker.py)

The gateway's own (issue 40): who asks, how long a request takes whole, what it used.

    canary_router_requests_in_flight                         /v1/* requests being served (streams to their end)
    canary_router_client_requests_total{client}              /v1/* requests let in, per client ("" anonymous)
    canary_router_client_refusals_total{client, reason}      invalid_api_key (client ""), rate_limit_exceeded, and
                                                             every reason of canary_router_requests_refused_total
    gen_ai_client_operation_duration_seconds{GENAI..., error_type}   histogram: the whole request, from its
        arrival to its last byte; error_type "" when it ended well, else all_failed, router_overloaded,
        client_gone, http_<status> (an error handed over), or the reason a committed stream ended
    gen_ai_client_token_usage{GENAI..., gen_ai_token_type}   histogram: the upstream's usage (input | output)
    process_*, python_*                                      prometheus_client's process and platform collectors

`GET /metrics` is prometheus_client's own ASGI app over this registry: gzip when the scraper asks for it, and
OpenMetrics when its `Accept` prefers it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import httpx
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    make_asgi_app,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import Receive, Scope, Send

from provider_canary.router.attempts import JudgedAnswer, Stage, TierAttempt
from provider_canary.router.ignore import ListStatus
from provider_canary.router.lists_poll import polls_counter
from provider_canary.router.live_metrics import LiveMetrics
from provider_canary.router.metric_children import Children
from tasks.core.metric_rollup import DURATION, FIRST_CHUNK, GENAI_BUCKETS_S

if TYPE_CHECKING:
    from provider_canary.router.routes import Tier

disable_created_metrics()  # no `*_created` series beside each counter (Prometheus does not need them)
TIER_LABELS = ("route", "tier", "server", "model")
GENAI_LABELS = ("gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "server_address",
                "server_port", "route", "tier")
#: OpenTelemetry GenAI `gen_ai.client.token.usage` (unit `{token}`, no suffix in Prometheus) and its buckets.
TOKEN_USAGE = "gen_ai_client_token_usage"
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)


def server_of(base_url: str) -> str:
    """`host[:port]` of a base URL as it names them (`https://openrouter.ai/api/v1` -> `openrouter.ai`): never its
    credentials, path or query. The rule is `Tier.server`'s (provider_canary/router/routes.py)."""
    from provider_canary.router.routes import tier_server

    return tier_server(base_url)


@lru_cache(maxsize=1024)  # a tier's, asked on every request
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


class _Lists(Collector):
    """The tiers' ignore lists, read at each scrape (one stat() per list)."""

    def __init__(self, lists: Callable[[], Sequence[ListStatus]], pending: Callable[[], int]) -> None:
        self._lists = lists
        self._pending = pending

    def collect(self) -> Iterator[Metric]:
        labels = ["route", "tier", "model"]
        present = GaugeMetricFamily("canary_router_ignore_list_present", "1 when the tier's canary ignore list "
                                    "exists (0: the tier sends traffic without the canary's exclusions)", labels=labels)
        entries = GaugeMetricFamily("canary_router_ignore_list_entries", "Tags in the tier's canary ignore list",
                                    labels=labels)
        age = GaugeMetricFamily("canary_router_ignore_list_age_seconds", "Seconds since the canary last wrote the "
                                "tier's ignore list (it rewrites it after every round)", labels=labels)
        stale = GaugeMetricFamily("canary_router_ignore_list_stale", "1 when the tier's ignore list is older than "
                                  "two canary intervals (router.canary_interval_s)", labels=labels)
        for status in self._lists():
            values = [status.route, str(status.tier), status.model]
            present.add_metric(values, 1.0 if status.exists else 0.0)
            if status.exists:
                entries.add_metric(values, float(status.entries))
                age.add_metric(values, float(status.age_s or 0.0))
                stale.add_metric(values, 1.0 if status.stale else 0.0)
        yield from (present, entries, age, stale)
        yield GaugeMetricFamily("canary_router_pending_on_disk", "Live counts and route events kept on disk while "
                                "the database was busy, written at the next start", value=float(self._pending()))


class MetricsApp:
    """`GET /metrics`: prometheus_client's ASGI app (gzip, OpenMetrics negotiation) as a Starlette endpoint."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._app = make_asgi_app(registry)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


class _Circuits(Collector):
    """Each tier's circuit, read at each scrape: (route, tier number, open)."""

    def __init__(self, circuits: Callable[[], Sequence[tuple[str, int, bool]]]) -> None:
        self._circuits = circuits

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("canary_router_tier_open", "1 while the tier's circuit is open or half-open: "
                                   "requests skip it after router.allowed_fails failures in a row",
                                   labels=["route", "tier"])
        for route, tier_no, is_open in self._circuits():
            family.add_metric([route, str(tier_no)], 1.0 if is_open else 0.0)
        yield family


class RouterMetrics:
    def __init__(
        self,
        ignore_reads: Callable[[], int] = lambda: 0,
        lists: Callable[[], Sequence[ListStatus]] = lambda: (),
        pending_on_disk: Callable[[], int] = lambda: 0,
        circuits: Callable[[], Sequence[tuple[str, int, bool]]] = lambda: (),
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("canary_router_requests", "Chat requests by the tier that served them "
                                "(outcome served), all_failed (every tier failed) or router_overloaded (no free "
                                "upstream connection; no tier labels on either)",
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
        self.registry.register(_Lists(lists, pending_on_disk))
        self.registry.register(_Circuits(circuits))
        self.judged_answers = Counter("canary_router_answers_judged", "Answers the router passed, judged with the "
                                      "canary's own checks per quality class (reason ok: the check held)",
                                      (*TIER_LABELS, "quality", "reason"), registry=self.registry)
        self.unjudged = Counter("canary_router_answers_unjudged", "Streamed answers not judged: the judge's queue "
                                "was full (queue_full) or judging raised (error)", ("reason",), registry=self.registry)
        self.clients_gone = Counter("canary_router_clients_gone", "Clients that left before the first content chunk "
                                    "(the walk over tiers was cancelled)", ("route",), registry=self.registry)
        self.refused = Counter("canary_router_requests_refused", "Requests refused before any tier was asked",
                               ("reason",), registry=self.registry)
        self.in_flight = Gauge("canary_router_requests_in_flight", "/v1/* requests being served now (a stream "
                               "until its last byte)", registry=self.registry)
        self.client_requests = Counter("canary_router_client_requests", "/v1/* requests let in, per client (the "
                                       "[[client]] name, a key route's key:<prefix>, or \"\" when anonymous)",
                                       ("client",), registry=self.registry)
        self.client_refusals = Counter("canary_router_client_refusals", "Requests refused before any tier was "
                                       "asked, per client (\"\": none identified) and reason", ("client", "reason"),
                                       registry=self.registry)
        self.duration = Histogram(DURATION, "GenAI operation duration: the whole request, from its arrival to its "
                                  "last byte; error_type names how it failed (empty when it did not)",
                                  (*GENAI_LABELS, "error_type"), buckets=GENAI_BUCKETS_S, registry=self.registry)
        self.tokens = Histogram(TOKEN_USAGE, "GenAI token usage per answer, from the upstream's usage "
                                "(gen_ai_token_type input: prompt tokens, output: completion tokens)",
                                (*GENAI_LABELS, "gen_ai_token_type"), buckets=TOKEN_BUCKETS, registry=self.registry)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.asgi = MetricsApp(self.registry)
        # per-endpoint live counters for the canary (provider_canary/router/live_metrics.py)
        self.live = LiveMetrics(self.registry)
        self.lists_polls = polls_counter(self.registry)  # lists_url's answers (provider_canary/router/lists_poll.py)
        # the children the request path asks for, kept (provider_canary/router/metric_children.py)
        self._requests, self._failovers = Children(self.requests), Children(self.failovers)
        self._first_chunk, self._after_commit = Children(self.first_chunk), Children(self.after_commit)
        self._judged, self._refused = Children(self.judged_answers), Children(self.refused)
        self._client_refusals, self._duration = Children(self.client_refusals), Children(self.duration)
        self._tokens, self._clients_gone = Children(self.tokens), Children(self.clients_gone)
        self._client_requests = Children(self.client_requests)

    # -- the attempt observer's sink (provider_canary/router/attempts.py) ---------------------------------------------
    def attempt(self, a: TierAttempt) -> None:
        if a.stage is Stage.FAILED_OVER and a.reason is not None:
            self.failover(a.route.key, a.tier_no, a.tier, str(a.reason))
        elif a.stage in (Stage.ANSWERED, Stage.HANDED_LATER):
            self.served(a.route.key, a.tier_no, a.tier, None)
        elif a.stage is Stage.COMMITTED:
            self.served(a.route.key, a.tier_no, a.tier, a.latency_ms)
        elif a.stage is Stage.ABORTED and a.reason is not None:
            self.failed_after_commit(a.route.key, a.tier_no, a.tier, str(a.reason))

    def judged(self, answer: JudgedAnswer) -> None:
        tier = answer.tier
        for v in answer.checks:
            self._judged(answer.route.key, answer.tier_no, tier.server, tier.model, v.quality, v.reason).inc()

    def served(self, route: str, tier_no: int, tier: Tier, first_chunk_ms: float | None) -> None:
        self._requests(route, tier_no, tier.server, tier.model, "served").inc()
        if first_chunk_ms is not None:
            self._first_chunk(*_genai(route, tier_no, tier)).observe(first_chunk_ms / 1000)

    def all_failed(self, route: str) -> None:
        self._requests(route, "", "", "", "all_failed").inc()

    def failover(self, route: str, tier_no: int, tier: Tier, reason: str) -> None:
        self._failovers(route, tier_no, tier.server, tier.model, reason).inc()

    def failed_after_commit(self, route: str, tier_no: int, tier: Tier, reason: str) -> None:
        self._after_commit(route, tier_no, tier.server, tier.model, reason).inc()

    def refuse(self, reason: str, client: str) -> None:
        """A request refused before any tier was asked, in the totals and per client."""
        self._refused(reason).inc()
        self._client_refusals(client, reason).inc()

    def overloaded(self, route: str) -> None:
        self._requests(route, "", "", "", "router_overloaded").inc()

    def finished(self, route: str, tier_no: int | None, tier: Tier | None, error_type: str, seconds: float,
                 usage: tuple[int | None, int | None] = (None, None)) -> None:
        """A request's whole duration (and the upstream's usage of the tier that answered, when it said)."""
        genai = _genai(route, tier_no, tier)
        self._duration(*genai, error_type).observe(seconds)
        for kind, count in zip(("input", "output"), usage, strict=True):
            if count is not None:
                self._tokens(*genai, kind).observe(count)

    def let_in(self, client: str) -> None:
        """A /v1/* request past the door (provider_canary/router/access.py): counted for its client, in flight until it
        ends."""
        self._client_requests(client).inc()
        self.in_flight.inc()

    def client_gone(self, route: str) -> None:
        self._clients_gone(route).inc()


def _genai(route: str, tier_no: int | None, tier: Tier | None) -> tuple[str, ...]:
    """GENAI_LABELS' values for a tier (empty model, server and tier when no tier answered)."""
    if tier is None or tier_no is None:
        return ("chat", "openrouter", "", "", "", route, "")
    address, port = _address_port(tier.base_url)
    return ("chat", "openrouter", tier.model, address, port, route, str(tier_no))
