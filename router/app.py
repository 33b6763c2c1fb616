"""The router's shell: an OpenAI-compatible Starlette app in front of the tiers (docs/requirements.md 6).

`POST /v1/chat/completions` (streaming and not) walks the route's tiers in key order (router/tiers.py),
runs the savers (router/savings.py), merges the canary's ignore list (router/ignore.py, payload.py), and
commits a stream only on its first content chunk (router/stream.py, upstream.py). `GET /v1/models` lists
the routes keyed by model name. `GET /healthz` reports cooldowns and sink backlogs.

Every failover and every post-commit failure is a `RouteEvent`, buffered and flushed to the sinks from a
background thread every `flush_interval_s`. Client API keys appear only as `key:<sha256 prefix>`; tier keys
come from the environment and are sent only in the upstream Authorization header.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route as HttpRoute

from router import records
from router import tiers as tier_rules
from router.events import Batcher, JsonlSink, event_batchers, flush_all
from router.ignore import IgnoreLists
from router.live import LiveRecorder, live_batchers, outcome_of, provider_in, stream_outcome
from router.metrics import RouterMetrics
from router.payload import build_body, merge_provider
from router.routes import Route, Routes
from router.routes_loading import resolve_api_keys
from router.savings import PipelineResult, SaverContext, Savings, measure_savings, run_savers
from router.stream import Gate
from router.tokens import TOKENIZER
from router.upstream import Committed, Passthrough, TierFailure, relay, try_once, try_stream
from tasks.clock import Clock, SystemClock
from tasks.core.http_rules import parse_retry_after
from tasks.core.live_records import LiveOutcome
from tasks.core.types import RouteEvent
from tasks.secrets import SecretStr, install_redaction

log = logging.getLogger("router")


def _error(status: int, message: str, headers: Mapping[str, str] | None = None, **meta: Any) -> JSONResponse:
    return JSONResponse(records.error_body(status, message, **meta), status_code=status, headers=headers)


@dataclass
class RouterShell:
    routes: Routes
    api_keys: dict[str, SecretStr]
    clock: Clock
    ignore: IgnoreLists
    events: list[Batcher[RouteEvent]]
    savings: Batcher[dict[str, Any]] | None
    cooldowns: tier_rules.Cooldowns = field(default_factory=lambda: tier_rules.EMPTY_COOLDOWNS)
    client: httpx.AsyncClient | None = None
    metrics: RouterMetrics = field(default_factory=RouterMetrics)  # GET /metrics (router/metrics.py)
    live: LiveRecorder | None = None  # live traffic per endpoint, for the canary's suspicion (router/live.py)

    @property
    def batchers(self) -> list[Batcher[Any]]:
        live = self.live.batchers if self.live else []
        return [*self.events, *([self.savings] if self.savings else []), *live]

    def emit(self, route: Route, tier_no: int, reason: str, latency_ms: float, model: str | None) -> None:
        event = records.route_event(self.clock.now(), route, tier_no, reason, latency_ms, model)
        log.warning("route %s tier %d degraded: %s (%.0f ms)", route.key, tier_no, reason, latency_ms)
        for batcher in self.events:
            batcher.add([event])

    def record_savings(
        self,
        route: Route,
        tier_no: int,
        pipeline: PipelineResult,
        savings: Savings,
        billed: int | None,
        stream: bool,
    ) -> None:
        record = records.savings_record(self.clock.now(), route, tier_no, pipeline, savings, billed, stream)
        log.info("savings %s tier %d: %s", route.key, tier_no, record)
        if self.savings is not None:
            self.savings.add([record])

    def note_failure(self, route: Route, tier_no: int, failure: TierFailure, model: str | None) -> None:
        upstream_id = route.tiers[tier_no - 1].upstream_id
        seconds = parse_retry_after(failure.retry_after, self.clock.now())
        cap = self.routes.settings.max_cooldown_s
        self.cooldowns = tier_rules.cool_down(
            self.cooldowns, upstream_id, self.clock.monotonic(), seconds, cap
        )
        self.emit(route, tier_no, failure.reason, failure.latency_ms, model)
        self.metrics.failover(route.key, tier_no, route.tiers[tier_no - 1], failure.reason)
        if self.live:
            self.live.attempt(route, tier_no, outcome_of(failure.reason), provider_in(failure.detail))

    # -- the endpoint --------------------------------------------------------------------------------
    async def chat(self, request: Request) -> Response:
        assert self.client is not None, "the app's lifespan did not run"
        settings = self.routes.settings
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError):
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        model = body.get("model") if isinstance(body.get("model"), str) else None
        route = self.routes.find(model, records.bearer(request.headers.get("authorization")))
        if route is None:
            return _error(404, f"no route for model {model!r}")
        pipeline = run_savers(body.get("messages"), settings.savers, SaverContext(settings.token_budget))
        if pipeline.failed:
            log.warning("savers failed open on %s (request sent unmodified): %s", route.key, pipeline.failed)
        stream = body.get("stream") is True
        now = self.clock.monotonic()
        self.cooldowns = tier_rules.prune(self.cooldowns, now)
        order = tier_rules.walk_order([t.upstream_id for t in route.tiers], self.cooldowns, now)
        failures: list[tuple[int, str]] = []
        for index in order:
            tier_no, tier = index + 1, route.tiers[index]
            ignore = self.ignore.for_tier(tier)
            if tier_rules.pinned_all_excluded(merge_provider(body.get("provider"), tier.provider, ignore)):
                self.emit(route, tier_no, tier_rules.SKIP_PINNED_EXCLUDED, 0.0, model)  # no request sent
                failures.append((tier_no, tier_rules.SKIP_PINNED_EXCLUDED))
                continue
            baseline = build_body(body, tier, ignore)
            sent = build_body(body, tier, ignore, pipeline.messages) if pipeline.changed else baseline
            key = self.api_keys[tier.api_key_env].get() if tier.api_key_env else None
            headers = records.upstream_headers(tier, key, request.headers, stream)
            url = f"{tier.base_url}/chat/completions"
            result: TierFailure | Passthrough | Committed
            if stream:
                budget_s, idle_s = settings.first_chunk_budget_s, settings.idle_timeout_s
                result = await try_stream(
                    self.client, url, sent, headers, budget_s, self.clock.monotonic, idle_s
                )
            else:
                result = await try_once(
                    self.client, url, sent, headers, settings.request_timeout_s, self.clock.monotonic
                )
            if isinstance(result, TierFailure):
                self.note_failure(route, tier_no, result, model)
                failures.append((tier_no, result.reason))
                continue
            savings = measure_savings(baseline, sent)
            out_headers = records.response_headers(route, tier_no, savings, pipeline, result.headers)
            self.metrics.served(route.key, tier_no, tier, result.latency_ms if isinstance(result, Committed) else None)
            if isinstance(result, Passthrough):
                billed = records.billed_prompt_tokens(result.body) if result.status == 200 else None
                if self.live and result.status == 200:
                    self.live.attempt(route, tier_no, LiveOutcome.OK, provider_in(result.body))
                self.record_savings(route, tier_no, pipeline, savings, billed, stream)
                return Response(result.body, status_code=result.status, headers=out_headers)
            return self._stream_response(route, tier_no, result, out_headers, pipeline, savings, model)
        return self._all_failed(route, failures)

    def _stream_response(
        self,
        route: Route,
        tier_no: int,
        committed: Committed,
        headers: dict[str, str],
        pipeline: PipelineResult,
        savings: Savings,
        model: str | None,
    ) -> StreamingResponse:
        started = self.clock.monotonic()
        aborted: list[str] = []

        def on_abort(reason: str) -> None:
            latency_ms = (self.clock.monotonic() - started) * 1000 + committed.latency_ms
            self.emit(route, tier_no, reason, latency_ms, model)
            self.metrics.failed_after_commit(route.key, tier_no, route.tiers[tier_no - 1], reason)
            aborted.append(reason)

        def on_close(gate: Gate) -> None:
            if self.live:
                outcome = stream_outcome(gate, aborted[0] if aborted else None)
                self.live.attempt(route, tier_no, outcome, gate.provider)

        def on_end(billed: int | None) -> None:
            self.record_savings(route, tier_no, pipeline, savings, billed, True)

        body = relay(committed, lambda: int(self.clock.now().timestamp()), on_abort, on_end, on_close)
        headers = {**headers, "cache-control": "no-cache", "x-accel-buffering": "no"}
        headers.pop("content-type", None)
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)

    def _all_failed(self, route: Route, failures: Sequence[tuple[int, str]]) -> JSONResponse:
        now, ids = self.clock.monotonic(), [t.upstream_id for t in route.tiers]
        every_tier_cooling = all(tier_rules.is_cooling(self.cooldowns, u, now) for u in ids)
        wait = tier_rules.shortest_wait(self.cooldowns, ids, now) if every_tier_cooling else None
        self.metrics.all_failed(route.key)
        body, headers = records.all_failed(route, failures, wait)
        return JSONResponse(body, status_code=503, headers=headers)

    async def models(self, request: Request) -> JSONResponse:
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "canary-router"}
            for m in self.routes.model_names
        ]
        return JSONResponse({"object": "list", "data": data})

    async def health(self, request: Request) -> JSONResponse:
        now = self.clock.monotonic()
        cooling = sum(1 for until in self.cooldowns.values() if until > now)
        pending, dropped = sum(b.pending() for b in self.events), sum(b.dropped for b in self.events)
        body = {
            "ok": True,
            "tokenizer": TOKENIZER,
            "cooling": cooling,
            "pending_events": pending,
            "dropped_events": dropped,
        }
        return JSONResponse(body)


def build_shell(
    routes: Routes,
    *,
    env: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    events: list[Batcher[RouteEvent]] | None = None,
) -> RouterShell:
    """Resolve keys (RoutesError if one is missing) and the sinks named by the routes file."""
    install_redaction()  # the router's composition root: its logs and events are redacted from here on
    settings = routes.settings
    ignore = IgnoreLists(settings.publish_dir)
    clock = clock or SystemClock()
    return RouterShell(
        routes=routes,
        api_keys=resolve_api_keys(routes, os.environ if env is None else env),
        clock=clock,
        ignore=ignore,
        metrics=RouterMetrics(lambda: ignore.reads),
        events=event_batchers(settings.events_path, settings.events_db) if events is None else events,
        savings=Batcher(JsonlSink(settings.savings_path), "router-savings")
        if settings.savings_path
        else None,
        live=LiveRecorder(clock, live_batchers(settings.events_db)),
    )


async def _flush_loop(shell: RouterShell) -> None:
    while True:
        await asyncio.sleep(shell.routes.settings.flush_interval_s)
        await asyncio.to_thread(flush_all, shell.batchers)


def create_app(shell: RouterShell) -> Starlette:
    settings = shell.routes.settings

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        timeout = httpx.Timeout(
            connect=settings.connect_timeout_s, read=None, write=30.0, pool=settings.connect_timeout_s
        )
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
        async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
            shell.client = client
            flusher = asyncio.create_task(_flush_loop(shell))
            try:
                yield
            finally:
                flusher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await flusher
                flush_all(shell.batchers)
                shell.client = None

    async def chat(request: Request) -> Response:
        try:
            return await shell.chat(request)
        except Exception as exc:  # never a traceback to the client
            log.error("router error: %s: %s", type(exc).__name__, str(exc)[:200])
            return _error(500, f"router error: {type(exc).__name__}")

    app = Starlette(
        routes=[
            HttpRoute("/v1/chat/completions", chat, methods=["POST"]),
            HttpRoute("/v1/models", shell.models, methods=["GET"]),
            HttpRoute("/healthz", shell.health, methods=["GET"]),
            HttpRoute("/metrics", shell.metrics.endpoint, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.router = shell
    return app
