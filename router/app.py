"""The router's shell: an OpenAI-compatible Starlette app in front of the tiers (docs/requirements.md 6).

`POST /v1/chat/completions` (streaming and not) reads the body (capped: 413 past `max_body_bytes`; parsed,
with the savers, off the event loop when large: router/request.py), then walks the route's tiers in key order
(router/tiers.py), merging the canary's ignore list (router/ignore.py, payload.py). A stream commits only on its
first content chunk (router/stream.py, upstream.py); an answer that finished empty fails over while another tier
could answer. Every answer passed is judged (router/answer.py, judging.py): a non-streamed one before it is sent
(one that fails its tools or structured check is asked of the next tier), a streamed one after its last byte.
A client that leaves before the first chunk cancels the walk. A tier whose circuit is open is skipped
(router/breaker.py, circuits.py). The tier keys are masked out of every byte relayed (router/masking.py).
`GET /v1/models` (and `/v1/models/{id}`) lists the routes keyed by model name, unknown paths answer JSON 404, CORS
when configured (router/wire.py); `GET /healthz` reports cooldowns, circuits, sink backlogs, the judging and the
canary's lists; `GET /livez` says the process answers, `GET /readyz` whether it is ready for traffic
(router/readiness.py). In front of every `/v1/*` path the door (router/access.py) asks for a client key when the
routes file names clients, and applies their rate limits. `GET /metrics` is prometheus_client's own ASGI app over
the router's registry.

What happened on each tier is said once, as a `TierAttempt` (router/attempts.py), to one observer that route
events, metrics, live counts and cooldowns hang on. Client API keys appear only as `key:<sha256 prefix>` or as
their `[[client]]` name; tier keys come from the environment and are sent only in the upstream Authorization
header. No prompt or answer text is stored or logged. When the router's own upstream pool has no connection
free (`max_connections`), the walk ends with 503 `router_overloaded`: the router's saturation, never a tier's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route as HttpRoute

import router.answer as answers
from router import access, reasons, records
from router import clients as client_rules
from router import ignore as ignore_lists
from router import tiers as tier_rules
from router.access import SCOPE_KEY, Door
from router.attempts import AttemptObserver, CooldownBook, RouteEventLog, Stage, TierAttempt
from router.breaker import Admission, Policy
from router.circuits import CircuitBook
from router.ignore import IgnoreLists
from router.judging import AnswerJudging, StreamedAnswer
from router.list_watch import watch_missing
from router.lists_poll import ListsPoller, attach, start_poller
from router.live import LiveRecorder, live_batchers, provider_in, stream_end
from router.masking import RelayMask
from router.metrics import RouterMetrics
from router.payload import build_body, merge_provider
from router.readiness import SinkState, not_ready
from router.reasons import Cause
from router.records import TierFailed
from router.request import OFF_LOOP_BYTES, Prepared, Refusal, prepare
from router.route_events import Batcher, JsonlSink, flush_all, route_event_batchers
from router.routes import Route, Routes
from router.routes_loading import resolve_api_keys
from router.savings import PipelineResult, Savings, measure_savings
from router.stream_events import usage_tokens
from router.tokens import TOKENIZER
from router.upstream import Committed, Passthrough, Relayed, TierFailure, relay, try_once, try_stream
from router.wire import EXCEPTION_HANDLERS, cors_middleware, error_response, model_retrieve, models_list
from tasks.clock import Clock, SystemClock
from tasks.core.http_rules import parse_retry_after
from tasks.core.types import RouteEvent
from tasks.secrets import SecretStr, install_redaction

log = logging.getLogger("router")

#: Seconds the judging may take at shutdown to finish the streamed answers still queued.
DRAIN_S = 5.0
#: Seconds the last flush waits for a busy DuckDB file before keeping its records on disk for the next start.
SHUTDOWN_LOCK_TIMEOUT_S = 1.0
#: The status of a request whose client left before the first chunk (nginx's "client closed request").
CLIENT_GONE = 499
#: The reason recorded for a tier skipped because its circuit is open (router/breaker.py).
SKIP_CIRCUIT_OPEN = reasons.fixed(Cause.CIRCUIT_OPEN)


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
    client: str = ""  # the client's name (router/access.py), "" when anonymous
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
    judging: AnswerJudging
    circuits: CircuitBook
    mask: RelayMask
    client: httpx.AsyncClient | None = None
    lists_poll: ListsPoller | None = None  # `lists_url`: the canary's lists over HTTP (router/lists_poll.py)

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
        started, client = self.clock.monotonic(), str(request.scope.get(SCOPE_KEY, ""))
        try:
            raw = await _read_capped(request, settings.max_body_bytes)
        except BodyTooLarge:
            self.metrics.refuse("body_too_large", client)
            return error_response(413, f"the request body is over the router's limit of {settings.max_body_bytes} "
                                       "bytes (router.max_body_bytes)")
        api_key = client_rules.bearer_key(request.headers.get("authorization"))
        if len(raw) >= OFF_LOOP_BYTES:
            prepared = await asyncio.to_thread(prepare, raw, self.routes, api_key)
        else:
            prepared = prepare(raw, self.routes, api_key)
        if isinstance(prepared, Refusal):
            self.metrics.refuse(prepared.reason, client)
            code = "model_not_found" if prepared.reason == "no_route" else prepared.reason
            return error_response(prepared.status, prepared.message, code=code,
                                  param="model" if prepared.status == 404 else None)
        if prepared.pipeline.failed:
            log.warning("savers failed open on %s (request sent unmodified): %s", prepared.route.key,
                        prepared.pipeline.failed)
        w = Walk(prepared, request.headers, client, started)
        response = await self._walk_while_connected(w, request)
        if not isinstance(response, StreamingResponse):  # a stream is finished by its relay's end
            self._finish(w)
        return response

    async def _walk_while_connected(self, w: Walk, request: Request) -> Response:
        """The walk, cancelled when the client leaves before it returns."""
        prepared = w.prepared
        walk = asyncio.ensure_future(self.walk(w))
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
        self.metrics.client_gone(prepared.route.key)
        log.info("route %s: the client %sleft before the first chunk; no further tier asked", prepared.route.key,
                 f"{w.client} " if w.client else "")
        w.ended(None, "client_gone")
        return Response(status_code=CLIENT_GONE)

    def _finish(self, w: Walk) -> None:
        """The whole request's duration (and the upstream's usage), once it ended."""
        route = w.prepared.route
        tier = route.tiers[w.tier_no - 1] if w.tier_no is not None else None
        self.metrics.finished(route.key, w.tier_no, tier, w.error_type, self.clock.monotonic() - w.started, w.usage)

    async def walk(self, w: Walk) -> Response:
        """The walk over the route's tiers: each one skipped, failed over, or the answer."""
        route, body = w.prepared.route, w.prepared.body
        now = self.clock.monotonic()
        order = tier_rules.walk_order([t.upstream_id for t in route.tiers], self.cooldown_book.prune(), now)
        plan = []
        for index in order:
            tier = route.tiers[index]
            ignore = self.ignore.for_tier(tier)
            excluded = tier_rules.pinned_all_excluded(merge_provider(body.get("provider"), tier.provider, ignore))
            plan.append((index, ignore, excluded, excluded or self.circuits.blocked(tier)))
        last = max((i for i, (_, _, _, out) in enumerate(plan) if not out), default=-1)
        for position, (index, ignore, excluded, _) in enumerate(plan):
            if excluded:  # no request sent
                self._attempt(w, Stage.SKIPPED, index + 1, reason=tier_rules.SKIP_PINNED_EXCLUDED)
                continue
            response = await self._try_admitted(w, index + 1, ignore, another=position < last)
            if response is not None:
                return response
        return self._walk_ended(w)

    async def _try_admitted(self, w: Walk, tier_no: int, ignore: Sequence[str], another: bool) -> Response | None:
        """A tier skipped (its circuit is open: router/breaker.py) or tried; a circuit trial that ends without an
        outcome (its client left) frees the trial for the next request."""
        tier = w.prepared.route.tiers[tier_no - 1]
        admission = self.circuits.admit(tier)
        if admission is Admission.SKIP:  # counted for the endpoint as the failure that opened it (router/breaker.py)
            opened_by, provider = self.circuits.opened_by(tier)
            self._attempt(w, Stage.SKIPPED, tier_no, reason=SKIP_CIRCUIT_OPEN, opened_by=opened_by, provider=provider)
            return None
        if admission is Admission.TRIAL:
            w.trials.add(tier_no)
        try:
            return await self._try_tier(w, tier_no, ignore, another)
        finally:
            if admission is Admission.TRIAL and tier_no not in w.recorded:
                self.circuits.release(tier)

    def _attempt(self, w: Walk, stage: Stage, tier_no: int, **fields: Any) -> None:
        attempt = TierAttempt(stage, w.prepared.route, tier_no, client_model=w.prepared.model, client=w.client,
                              trial=tier_no in w.trials, **fields)
        w.recorded.add(tier_no)
        self.observer.attempt(attempt)
        if stage in (Stage.SKIPPED, Stage.FAILED_OVER) and attempt.reason is not None:
            wait = parse_retry_after(attempt.retry_after, self.clock.now()) if attempt.retry_after else None
            w.failures.append(TierFailed(tier_no, attempt.reason, wait))

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
            budget_s = p.route.first_chunk_budget(tier_no, settings.first_chunk_budget_s)
            result = await try_stream(self.client, url, sent, headers, budget_s, self.clock.monotonic,
                                      settings.idle_timeout_s, fail_over_empty=another, read_all=settings.judge)
        else:
            result = await try_once(self.client, url, sent, headers, settings.request_timeout_s, self.clock.monotonic)
        if isinstance(result, TierFailure) and result.reason.is_routers_own:
            return self._overloaded(w, tier_no)
        if isinstance(result, Passthrough):  # the tier keys never reach a client (router/masking.py)
            result = dataclasses.replace(result, body=self.mask(result.body), headers=self._masked(result.headers))
        elif isinstance(result, Committed):
            result.headers = self._masked(result.headers)
        if isinstance(result, TierFailure):
            self._failed_over(w, tier_no, result)
            if result.reason.cause is Cause.EMPTY_ANSWER and settings.judge:  # the gate saw the answer end empty
                self.judging.record(p.route, tier_no, result.provider, answers.EMPTY_REPLY)
            return None
        savings = await self._measure(baseline, sent)
        out_headers = records.response_headers(p.route, tier_no, savings, p.pipeline, result.headers)
        if isinstance(result, Committed):
            self._attempt(w, Stage.COMMITTED, tier_no, latency_ms=result.latency_ms, provider=result.gate.provider)
            return self._stream_response(w, tier_no, result, out_headers, savings)
        if result.status != 200 or p.stream:  # an error that is the request's (every tier would refuse it)
            self._attempt(w, Stage.ANSWERED, tier_no, latency_ms=result.latency_ms, status=result.status)
            self.record_savings(p.route, tier_no, p.pipeline, savings, None, p.stream)
            w.ended(tier_no, f"http_{result.status}")
            return Response(result.body, status_code=result.status, headers=out_headers)
        return await self._whole_answer(w, tier_no, result, out_headers, savings, another)

    def _masked(self, headers: dict[str, str]) -> dict[str, str]:
        return {k: self.mask.text(v) for k, v in headers.items()} if self.mask else headers

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
        provider, usage = attempt.served_provider, usage_tokens(doc)
        masked = answers.masked_failure(attempt)
        if masked is not None:
            self._failed_over(w, tier_no, TierFailure(masked, "", result.latency_ms), provider)
            return None
        checks: tuple[answers.CheckResult, ...] = ()
        if self.routes.settings.judge:
            checks = self.judging.checks(attempt, self.judging.expectations(p.tools, p.response_format))
            self.judging.record(p.route, tier_no, provider, checks)
        failed = answers.failed_check(checks)
        empty = answers.is_empty(attempt)
        flaw = "empty:empty_reply" if empty else f"{failed.quality}:{failed.reason}" if failed else None
        if flaw is not None:
            headers = {**headers, "x-canary-check-failed": flaw}
        if another and (empty or (failed is not None and p.route.retry_failed_checks)):
            why = reasons.fixed(Cause.EMPTY_ANSWER) if empty or failed is None else reasons.failed_check(failed.reason)
            self._failed_over(w, tier_no, TierFailure(why, "", result.latency_ms), provider)
            w.held = Held(tier_no, result, headers, flaw or "", provider, usage)
            return None
        self._attempt(w, Stage.ANSWERED, tier_no, latency_ms=result.latency_ms, provider=provider, status=200)
        self.record_savings(p.route, tier_no, p.pipeline, savings, usage[0], False)
        w.ended(tier_no, "", usage)
        return Response(result.body, status_code=200, headers=headers)

    def _walk_ended(self, w: Walk) -> Response:
        """Every tier failed or was skipped: the held answer if there is one, else the router's 503."""
        route = w.prepared.route
        if w.held is not None:
            held = w.held
            self._attempt(w, Stage.HANDED_LATER, held.tier_no, provider=held.provider, status=200)
            w.ended(held.tier_no, "", held.usage)
            return Response(held.result.body, status_code=200, headers=held.headers)
        self.metrics.all_failed(route.key)
        status, body, headers = records.walk_failed(route, w.failures, self._wait_s(route))
        w.ended(None, "all_failed" if status == 503 else f"http_{status}")
        return JSONResponse(body, status_code=status, headers=headers)

    def _wait_s(self, route: Route) -> float | None:
        """Seconds until the first tier takes requests again, when every one is cooling down or open."""
        return self.circuits.wait_s(route.tiers, self.cooldowns)

    def _overloaded(self, w: Walk, tier_no: int) -> Response:
        """The router's pool had no connection free for a tier: nothing was sent, no tier is blamed, and another
        tier would wait on the same pool, so the walk ends here."""
        route, settings = w.prepared.route, self.routes.settings
        self.metrics.overloaded(route.key)
        log.warning("route %s tier %d: no upstream connection free within %g s (router.max_connections = %d): 503 "
                    "router_overloaded%s", route.key, tier_no, settings.connect_timeout_s, settings.max_connections,
                    f" for client {w.client}" if w.client else "")
        w.ended(None, "router_overloaded")
        return JSONResponse(records.OVERLOADED, status_code=503, headers={"retry-after": "1"})

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
            ended, gate = stream_end(relayed.gate, relayed.aborted), relayed.gate
            self._attempt(w, Stage.ENDED, tier_no, reason=ended, provider=gate.provider)
            self.record_savings(p.route, tier_no, p.pipeline, savings, gate.prompt_tokens, True)
            why = str(ended) if ended is not None else "" if relayed.completed else "client_gone"
            w.ended(tier_no, why, (gate.prompt_tokens, gate.completion_tokens))
            self._finish(w)
            if judge and relayed.answer is not None and ended is None:
                self.judging.later(StreamedAnswer(p.route, tier_no, relayed.gate.provider, relayed.answer,
                                                p.tools, p.response_format))

        keep = self.routes.settings.judge_keep_bytes if judge else 0
        body = relay(committed, lambda: int(self.clock.now().timestamp()), on_abort, on_end, keep, self.mask)
        headers = {**headers, "cache-control": "no-cache", "x-accel-buffering": "no"}
        headers.pop("content-type", None)
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)

    async def models(self, request: Request) -> JSONResponse:
        return models_list(self.routes)

    async def model(self, request: Request) -> JSONResponse:
        return model_retrieve(self.routes, request.path_params["model"])

    async def health(self, request: Request) -> JSONResponse:
        now = self.clock.monotonic()
        cooling = sum(1 for until in self.cooldowns.values() if until > now)
        pending, dropped = sum(b.pending() for b in self.events), sum(b.dropped for b in self.events)
        lists = self.ignore.statuses(self.routes)
        circuits = self.circuits.health(self.routes)
        body = {
            "ok": True,
            "tokenizer": TOKENIZER,
            "cooling": cooling,
            "pending_events": pending,
            "dropped_events": dropped,
            "pending_live_counts": sum(b.pending() for b in self.live.batchers),
            "pending_on_disk": self.pending_on_disk(),
            "restored_from_disk": sum(b.spill.restored for b in self.batchers if b.spill is not None),
            "judge": {"enabled": self.routes.settings.judge, **self.judging.health()},
            "open_circuits": sum(1 for c in circuits if c["state"] != "closed"),
            "circuits": circuits,
            "lists_missing": sum(1 for s in lists if not s.exists),
            "lists_stale": sum(1 for s in lists if s.stale),
            "lists": [s.as_json() for s in lists],
            **({"lists_url": self.lists_poll.health()} if self.lists_poll else {}),
        }
        return JSONResponse(body)

    async def livez(self, request: Request) -> JSONResponse:
        return JSONResponse({"live": True})

    async def readyz(self, request: Request) -> JSONResponse:
        sinks = [SinkState(b.name, b.pending(), b.max_buffered, b.dropped) for b in self.batchers]
        reasons_ = not_ready(self.ignore.statuses(self.routes), sinks, self.client is not None)
        return JSONResponse({"ready": not reasons_, "reasons": reasons_}, status_code=503 if reasons_ else 200)


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
    poller = start_poller(routes)  # with lists_url: the first pass, before the lists are reported
    ignore_lists.report(ignore.statuses(routes), settings.require_ignore_lists, settings.canary_interval_s)
    access.report(routes)
    events = route_event_batchers(settings.events_path, settings.events_db) if events is None else events
    live = LiveRecorder(clock, live_batchers(settings.events_db))
    savings = Batcher(JsonlSink(settings.savings_path), "router-savings") if settings.savings_path else None
    every: list[Batcher[Any]] = [*events, *live.batchers, *([savings] if savings else [])]
    policy = Policy(settings.allowed_fails, settings.cooldown_s, settings.max_cooldown_s, settings.request_timeout_s)
    circuits = CircuitBook(clock, policy, events)
    metrics = RouterMetrics(lambda: ignore.reads, lambda: ignore.statuses(routes),
                            lambda: sum(b.spill.pending for b in every if b.spill is not None),
                            lambda: circuits.open_tiers(routes))
    cooldowns = CooldownBook(clock, settings.max_cooldown_s)
    metrics.live.prime(routes, settings.judge)
    attach(poller, metrics.lists_polls)
    observer = AttemptObserver([RouteEventLog(clock, events), metrics, metrics.live, live, cooldowns, circuits])
    return RouterShell(
        routes=routes, api_keys=api_keys, clock=clock, ignore=ignore, events=events, savings=savings,
        metrics=metrics, live=live, cooldown_book=cooldowns, observer=observer,
        judging=AnswerJudging(observer, metrics, settings.judge_queue), lists_poll=poller, circuits=circuits,
        mask=RelayMask(key.get() for key in api_keys.values()),
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
        limits = httpx.Limits(max_connections=settings.max_connections,
                              max_keepalive_connections=min(64, settings.max_connections))
        async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
            shell.client = client
            flusher = asyncio.create_task(_flush_loop(shell))
            judging = asyncio.create_task(shell.judging.run())
            polls = [asyncio.create_task(shell.lists_poll.run())] if shell.lists_poll else []
            lists = asyncio.create_task(watch_missing(lambda: shell.ignore.statuses(shell.routes),
                                                      settings.canary_interval_s))
            try:
                yield
            finally:
                await shell.judging.drain(DRAIN_S)
                for task in (judging, flusher, lists, *polls):
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
            return error_response(500, f"router error: {type(exc).__name__}")

    app = Starlette(
        routes=[
            HttpRoute("/v1/chat/completions", chat, methods=["POST"]),
            HttpRoute("/v1/models", shell.models, methods=["GET"]),
            HttpRoute("/v1/models/{model:path}", shell.model, methods=["GET"]),
            HttpRoute("/healthz", shell.health, methods=["GET"]),
            HttpRoute("/livez", shell.livez, methods=["GET"]),
            HttpRoute("/readyz", shell.readyz, methods=["GET"]),
            HttpRoute("/metrics", shell.metrics.asgi, methods=["GET"]),
        ],
        # CORS outermost (a browser's preflight carries no key), then the door in front of every /v1/* path
        middleware=[*cors_middleware(settings.cors_origins),
                    Middleware(Door, callers=shell.routes.callers, required=bool(shell.routes.clients),
                               clock=shell.clock, metrics=shell.metrics)],
        lifespan=lifespan,
        exception_handlers=EXCEPTION_HANDLERS,
    )
    app.state.router = shell
    return app
