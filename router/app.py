"""The router's shell: an OpenAI-compatible Starlette app in front of the tiers (docs/requirements.md 6).

`POST /v1/chat/completions` (streaming and not) reads the body (capped: 413 past `max_body_bytes`; parsed,
with the savers, off the event loop when large: router/request.py), then walks the route's tiers in key order
(router/tiers.py), merging the canary's ignore list (router/ignore.py, payload.py). A stream commits only on its
first content chunk (router/stream.py, upstream.py); an answer that finished empty fails over while another tier
could answer. Every answer passed is judged (router/answer.py, judging.py): a non-streamed one before it is sent
(one that fails its tools or structured check is asked of the next tier), a streamed one after its last byte.
A client that leaves before the first chunk cancels the walk. `GET /v1/models` lists the routes keyed by model
name; `GET /healthz` reports cooldowns, sink backlogs, the judge and the canary's lists.

What happened on each tier is said once, as a `TierAttempt` (router/attempts.py), to one observer that route
events, metrics, live counts and cooldowns hang on. Client API keys appear only as `key:<sha256 prefix>`; tier
keys come from the environment and are sent only in the upstream Authorization header. No prompt or answer
text is stored or logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route as HttpRoute

import router.answer as answers
from router import ignore as ignore_lists
from router import reasons, records
from router import tiers as tier_rules
from router.attempts import AttemptObserver, CooldownBook, RouteEventLog, Stage, TierAttempt
from router.events import Batcher, JsonlSink, event_batchers, flush_all
from router.ignore import IgnoreLists
from router.judging import Judge, StreamedAnswer
from router.list_watch import watch_missing
from router.live import LiveRecorder, live_batchers, provider_in, stream_end
from router.metrics import RouterMetrics
from router.payload import build_body, merge_provider
from router.reasons import Cause
from router.request import OFF_LOOP_BYTES, Prepared, Refusal, prepare
from router.routes import Route, Routes
from router.routes_loading import resolve_api_keys
from router.savings import PipelineResult, Savings, measure_savings
from router.tokens import TOKENIZER
from router.upstream import Committed, Passthrough, Relayed, TierFailure, relay, try_once, try_stream
from tasks.clock import Clock, SystemClock
from tasks.core.types import RouteEvent
from tasks.secrets import SecretStr, install_redaction

log = logging.getLogger("router")

#: Seconds the judge may take at shutdown to finish the streamed answers still queued.
DRAIN_S = 5.0
#: Seconds the last flush waits for a busy DuckDB file before keeping its records on disk for the next start.
SHUTDOWN_LOCK_TIMEOUT_S = 1.0
#: The status of a request whose client left before the first chunk (nginx's "client closed request").
CLIENT_GONE = 499


def _error(status: int, message: str, headers: Mapping[str, str] | None = None, **meta: Any) -> JSONResponse:
    return JSONResponse(records.error_body(status, message, **meta), status_code=status, headers=headers)


@dataclass
class Held:
    """A non-streamed answer that is not the last word (empty, or failed its check): handed to the client
    only if no later tier does better."""

    tier_no: int
    result: Passthrough
    headers: dict[str, str]  # the response headers it goes out with
    failure: str  # `<class>:<reason>`, for the x-canary-check-failed header
    provider: str | None


@dataclass
class Walk:
    """One request's walk over its route's tiers."""

    prepared: Prepared
    client_headers: Mapping[str, str]
    failures: list[tuple[int, str]] = field(default_factory=list)
    held: Held | None = None


class BodyTooLarge(Exception):
    pass


async def _read_capped(request: Request, cap: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise BodyTooLarge
    raw = bytearray()
    async for part in request.stream():
        raw += part
        if len(raw) > cap:
            raise BodyTooLarge
    return bytes(raw)


async def _client_left(receive: Callable[[], Awaitable[Mapping[str, Any]]]) -> None:
    """Returns when the client disconnects (the body is read: the next message is the disconnect)."""
    while (await receive()).get("type") != "http.disconnect":
        pass


@dataclass
class RouterShell:
    routes: Routes
    api_keys: dict[str, SecretStr]
    clock: Clock
    ignore: IgnoreLists
    events: list[Batcher[RouteEvent]]
    savings: Batcher[dict[str, Any]] | None
    metrics: RouterMetrics
    live: LiveRecorder
    cooldown_book: CooldownBook
    observer: AttemptObserver
    judge: Judge
    client: httpx.AsyncClient | None = None

    @property
    def batchers(self) -> list[Batcher[Any]]:
        return [*self.events, *([self.savings] if self.savings else []), *self.live.batchers]

    @property
    def cooldowns(self) -> tier_rules.Cooldowns:
        return self.cooldown_book.cooldowns

    def pending_on_disk(self) -> int:
        return sum(b.spill.pending for b in self.batchers if b.spill is not None)

    def record_savings(
        self, route: Route, tier_no: int, pipeline: PipelineResult, savings: Savings, billed: int | None, stream: bool
    ) -> None:
        record = records.savings_record(self.clock.now(), route, tier_no, pipeline, savings, billed, stream)
        log.debug("savings %s tier %d: %d of %d prompt tokens saved (%s)", route.key, tier_no, savings.tokens_saved,
                  savings.tokens_before, ", ".join(pipeline.applied) or "no saver")  # per request: DEBUG only
        if self.savings is not None:
            self.savings.add([record])

    # -- the endpoint --------------------------------------------------------------------------------
    async def chat(self, request: Request) -> Response:
        assert self.client is not None, "the app's lifespan did not run"
        settings = self.routes.settings
        try:
            raw = await _read_capped(request, settings.max_body_bytes)
        except BodyTooLarge:
            self.metrics.refused.labels("body_too_large").inc()
            return _error(413, f"the request body is over the router's limit of {settings.max_body_bytes} bytes "
                               "(router.max_body_bytes)")
        api_key = records.bearer(request.headers.get("authorization"))
        if len(raw) >= OFF_LOOP_BYTES:
            prepared = await asyncio.to_thread(prepare, raw, self.routes, api_key)
        else:
            prepared = prepare(raw, self.routes, api_key)
        if isinstance(prepared, Refusal):
            self.metrics.refused.labels(prepared.reason).inc()
            return _error(prepared.status, prepared.message)
        if prepared.pipeline.failed:
            log.warning("savers failed open on %s (request sent unmodified): %s", prepared.route.key,
                        prepared.pipeline.failed)
        walk = asyncio.ensure_future(self.walk(Walk(prepared, request.headers)))
        gone = asyncio.ensure_future(_client_left(request.receive))
        try:
            await asyncio.wait((walk, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not walk.done():
                walk.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await gone
        try:
            return await walk
        except asyncio.CancelledError:
            if not gone.done() or gone.cancelled():
                raise  # the server itself is cancelling this request
        self.metrics.clients_gone.labels(prepared.route.key).inc()
        log.info("route %s: the client left before the first chunk; no further tier asked", prepared.route.key)
        return Response(status_code=CLIENT_GONE)

    async def walk(self, w: Walk) -> Response:
        """The walk over the route's tiers: each one skipped, failed over, or the answer."""
        route, body = w.prepared.route, w.prepared.body
        now = self.clock.monotonic()
        order = tier_rules.walk_order([t.upstream_id for t in route.tiers], self.cooldown_book.prune(), now)
        plan = []
        for index in order:
            ignore = self.ignore.for_tier(route.tiers[index])
            excluded = tier_rules.pinned_all_excluded(merge_provider(body.get("provider"), route.tiers[index].provider,
                                                                     ignore))
            plan.append((index, ignore, excluded))
        last = max((i for i, (_, _, excluded) in enumerate(plan) if not excluded), default=-1)
        for position, (index, ignore, excluded) in enumerate(plan):
            tier_no = index + 1
            if excluded:  # no request sent
                self._attempt(w, Stage.SKIPPED, tier_no, reason=tier_rules.SKIP_PINNED_EXCLUDED)
                continue
            response = await self._try_tier(w, tier_no, ignore, another=position < last)
            if response is not None:
                return response
        return self._walk_ended(w)

    def _attempt(self, w: Walk, stage: Stage, tier_no: int, **fields: Any) -> None:
        attempt = TierAttempt(stage, w.prepared.route, tier_no, client_model=w.prepared.model, **fields)
        self.observer.attempt(attempt)
        if stage in (Stage.SKIPPED, Stage.FAILED_OVER) and attempt.reason is not None:
            w.failures.append((tier_no, str(attempt.reason)))

    def _failed_over(self, w: Walk, tier_no: int, failure: TierFailure, provider: str | None = None) -> None:
        self._attempt(w, Stage.FAILED_OVER, tier_no, reason=failure.reason, latency_ms=failure.latency_ms,
                      provider=provider or failure.provider or provider_in(failure.detail),
                      retry_after=failure.retry_after)

    async def _try_tier(self, w: Walk, tier_no: int, ignore: Sequence[str], another: bool) -> Response | None:
        """One tier: the answer for the client, or None to go on to the next tier."""
        assert self.client is not None
        p, settings = w.prepared, self.routes.settings
        tier = p.route.tiers[tier_no - 1]
        baseline = build_body(p.body, tier, ignore)
        sent = build_body(p.body, tier, ignore, p.pipeline.messages) if p.pipeline.changed else baseline
        key = self.api_keys[tier.api_key_env].get() if tier.api_key_env else None
        headers = records.upstream_headers(tier, key, w.client_headers, p.stream)
        url = f"{tier.base_url}/chat/completions"
        result: TierFailure | Passthrough | Committed
        if p.stream:
            result = await try_stream(self.client, url, sent, headers, settings.first_chunk_budget_s,
                                      self.clock.monotonic, settings.idle_timeout_s, fail_over_empty=another)
        else:
            result = await try_once(self.client, url, sent, headers, settings.request_timeout_s, self.clock.monotonic)
        if isinstance(result, TierFailure):
            self._failed_over(w, tier_no, result)
            if result.reason.cause is Cause.EMPTY_ANSWER and settings.judge:  # the gate saw the answer end empty
                self.judge.record(p.route, tier_no, result.provider, answers.EMPTY_REPLY)
            return None
        savings = await self._measure(baseline, sent)
        out_headers = records.response_headers(p.route, tier_no, savings, p.pipeline, result.headers)
        if isinstance(result, Committed):
            self._attempt(w, Stage.COMMITTED, tier_no, latency_ms=result.latency_ms, provider=result.gate.provider)
            return self._stream_response(w, tier_no, result, out_headers, savings)
        if result.status != 200 or p.stream:  # an error that is the request's (every tier would refuse it)
            self._attempt(w, Stage.ANSWERED, tier_no, latency_ms=result.latency_ms, status=result.status)
            self.record_savings(p.route, tier_no, p.pipeline, savings, None, p.stream)
            return Response(result.body, status_code=result.status, headers=out_headers)
        return await self._whole_answer(w, tier_no, result, out_headers, savings, another)

    async def _measure(self, baseline: bytes, sent: bytes) -> Savings:
        if len(sent) >= OFF_LOOP_BYTES:
            return await asyncio.to_thread(measure_savings, baseline, sent)
        return measure_savings(baseline, sent)

    async def _whole_answer(
        self, w: Walk, tier_no: int, result: Passthrough, headers: dict[str, str], savings: Savings, another: bool
    ) -> Response | None:
        """A non-streamed HTTP 200: no answer (fail over), not the last word (hold it, fail over), or the answer."""
        p = w.prepared
        if len(result.body) >= OFF_LOOP_BYTES:
            doc = await asyncio.to_thread(answers.parse_json_answer, result.body)
        else:
            doc = answers.parse_json_answer(result.body)
        if doc is None:  # a 200 the client cannot use
            bad = reasons.fixed(Cause.BAD_FRAME_BEFORE_COMMIT)
            self._failed_over(w, tier_no, TierFailure(bad, "HTTP 200 body is not a JSON object", result.latency_ms))
            return None
        attempt = answers.read_json(doc)
        provider = attempt.served_provider
        masked = answers.masked_failure(attempt)
        if masked is not None:
            self._failed_over(w, tier_no, TierFailure(masked, "", result.latency_ms), provider)
            return None
        verdicts: tuple[answers.Verdict, ...] = ()
        if self.routes.settings.judge:
            verdicts = self.judge.verdicts(attempt, self.judge.expectations(p.tools, p.response_format))
            self.judge.record(p.route, tier_no, provider, verdicts)
        failed = answers.failed_check(verdicts)
        empty = answers.is_empty(attempt)
        flaw = "empty:empty_reply" if empty else f"{failed.quality}:{failed.reason}" if failed else None
        if flaw is not None:
            headers = {**headers, "x-canary-check-failed": flaw}
        if another and (empty or (failed is not None and p.route.retry_failed_checks)):
            why = reasons.fixed(Cause.EMPTY_ANSWER) if empty or failed is None else reasons.failed_check(failed.reason)
            self._failed_over(w, tier_no, TierFailure(why, "", result.latency_ms), provider)
            w.held = Held(tier_no, result, headers, flaw or "", provider)
            return None
        self._attempt(w, Stage.ANSWERED, tier_no, latency_ms=result.latency_ms, provider=provider, status=200)
        self.record_savings(p.route, tier_no, p.pipeline, savings, records.billed_prompt_tokens(result.body), False)
        return Response(result.body, status_code=200, headers=headers)

    def _walk_ended(self, w: Walk) -> Response:
        """Every tier failed or was skipped: the held answer if there is one, else the router's 503."""
        route = w.prepared.route
        if w.held is not None:
            held = w.held
            self._attempt(w, Stage.HANDED_LATER, held.tier_no, provider=held.provider, status=200)
            return Response(held.result.body, status_code=200, headers=held.headers)
        now, ids = self.clock.monotonic(), [t.upstream_id for t in route.tiers]
        every_tier_cooling = all(tier_rules.is_cooling(self.cooldowns, u, now) for u in ids)
        wait = tier_rules.shortest_wait(self.cooldowns, ids, now) if every_tier_cooling else None
        self.metrics.all_failed(route.key)
        body, headers = records.all_failed(route, w.failures, wait)
        return JSONResponse(body, status_code=503, headers=headers)

    def _stream_response(
        self, w: Walk, tier_no: int, committed: Committed, headers: dict[str, str], savings: Savings
    ) -> StreamingResponse:
        p, started = w.prepared, self.clock.monotonic()
        judge = self.routes.settings.judge

        def on_abort(reason: reasons.FailoverReason) -> None:
            latency_ms = (self.clock.monotonic() - started) * 1000 + committed.latency_ms
            self._attempt(w, Stage.ABORTED, tier_no, reason=reason, latency_ms=latency_ms,
                          provider=committed.gate.provider)

        def on_end(relayed: Relayed) -> None:
            ended = stream_end(relayed.gate, relayed.aborted)
            self._attempt(w, Stage.ENDED, tier_no, reason=ended, provider=relayed.gate.provider)
            self.record_savings(p.route, tier_no, p.pipeline, savings, relayed.gate.prompt_tokens, True)
            if judge and relayed.completed and ended is None:
                self.judge.later(StreamedAnswer(p.route, tier_no, relayed.gate.provider, relayed.kept, relayed.cut,
                                                p.tools, p.response_format))

        keep = self.routes.settings.judge_keep_bytes if judge else 0
        body = relay(committed, lambda: int(self.clock.now().timestamp()), on_abort, on_end, keep)
        headers = {**headers, "cache-control": "no-cache", "x-accel-buffering": "no"}
        headers.pop("content-type", None)
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)

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
        lists = self.ignore.statuses(self.routes)
        body = {
            "ok": True,
            "tokenizer": TOKENIZER,
            "cooling": cooling,
            "pending_events": pending,
            "dropped_events": dropped,
            "pending_live_counts": sum(b.pending() for b in self.live.batchers),
            "pending_on_disk": self.pending_on_disk(),
            "restored_from_disk": sum(b.spill.restored for b in self.batchers if b.spill is not None),
            "judge": {"enabled": self.routes.settings.judge, **self.judge.health()},
            "lists_missing": sum(1 for s in lists if not s.exists),
            "lists_stale": sum(1 for s in lists if s.stale),
            "lists": [s.as_json() for s in lists],
        }
        return JSONResponse(body)


def build_shell(
    routes: Routes,
    *,
    env: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    events: list[Batcher[RouteEvent]] | None = None,
) -> RouterShell:
    """Resolve keys (RoutesError if one is missing), read the canary's lists (logged per route and tier;
    RoutesError when one is missing and `require_ignore_lists`), and open the sinks named by the routes file."""
    install_redaction()  # the router's composition root: its logs and events are redacted from here on
    settings = routes.settings
    clock = clock or SystemClock()
    api_keys = resolve_api_keys(routes, os.environ if env is None else env)
    ignore = IgnoreLists(settings.publish_dir)
    ignore_lists.report(ignore.statuses(routes), settings.require_ignore_lists, settings.canary_interval_s)
    events = event_batchers(settings.events_path, settings.events_db) if events is None else events
    live = LiveRecorder(clock, live_batchers(settings.events_db))
    savings = Batcher(JsonlSink(settings.savings_path), "router-savings") if settings.savings_path else None
    every: list[Batcher[Any]] = [*events, *live.batchers, *([savings] if savings else [])]
    metrics = RouterMetrics(lambda: ignore.reads, lambda: ignore.statuses(routes),
                            lambda: sum(b.spill.pending for b in every if b.spill is not None))
    cooldowns = CooldownBook(clock, settings.max_cooldown_s)
    observer = AttemptObserver([RouteEventLog(clock, events), metrics, live, cooldowns])
    return RouterShell(
        routes=routes, api_keys=api_keys, clock=clock, ignore=ignore, events=events, savings=savings,
        metrics=metrics, live=live, cooldown_book=cooldowns, observer=observer,
        judge=Judge(observer, metrics, settings.judge_queue),
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
            judge = asyncio.create_task(shell.judge.run())
            lists = asyncio.create_task(watch_missing(lambda: shell.ignore.statuses(shell.routes),
                                                      settings.canary_interval_s))
            try:
                yield
            finally:
                await shell.judge.drain(DRAIN_S)
                for task in (judge, flusher, lists):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                for batcher in shell.batchers:  # the last window is short: what a busy file refuses goes to disk
                    if hasattr(batcher.sink, "lock_timeout_s"):
                        batcher.sink.lock_timeout_s = SHUTDOWN_LOCK_TIMEOUT_S
                await asyncio.to_thread(flush_all, shell.batchers)
                for batcher in shell.batchers:
                    batcher.close()
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
