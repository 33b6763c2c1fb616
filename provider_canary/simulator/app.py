"""The Starlette app: OpenRouter's catalog and chat-completions routes over a swappable fleet.

A chat request is routed and planned here; provider_canary/simulator/player.py plays the planned reply.

A simulator-only extension: a request under `/at/<unix seconds>/api/v1/...` is served at that simulated time
(fault windows, ids) instead of the clock's now, so a history can probe several simulated rounds at once
(provider_canary/demo/pipeline.py). OpenRouter has no such path; the canary only meets it through a base_url.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from provider_canary.simulator import catalog_wire, wire
from provider_canary.simulator.faults import PROTOCOL_KINDS, Fault, FaultCounters, select_fault
from provider_canary.simulator.fleet import EndpointSpec, Fleet, ModelSpec
from provider_canary.simulator.language import detect_language
from provider_canary.simulator.plan import Plan, has_tools, is_structured, last_user_text, plan_reply, request_seed
from provider_canary.simulator.player import ReplyPlayer
from provider_canary.simulator.protocol import protocol_response
from provider_canary.simulator.routing import Route as Candidates
from provider_canary.simulator.routing import RoutingError, route, validate_provider
from provider_canary.simulator.text import estimate_tokens


class SimulatorState:
    """What the running app reads: the fleet (swappable, thread-safe), key, time scale, clock, counters."""

    def __init__(
        self, fleet: Fleet, api_key: str, time_scale: float, now: Callable[[], datetime] | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._fleet = fleet
        self.api_key = api_key
        self.time_scale = time_scale
        self._now = now or (lambda: datetime.now(UTC))
        self.counters = FaultCounters()
        self.stopping = threading.Event()
        self._ids = random.Random()

    @property
    def fleet(self) -> Fleet:
        with self._lock:
            return self._fleet

    def set_fleet(self, fleet: Fleet) -> None:
        with self._lock:
            self._fleet = fleet
            self.counters.reset()

    def now(self, request: Request | None = None) -> datetime:
        """The simulated time of `request` (its `/at/<unix>` path), else the clock's."""
        at = request.scope.get(_AT_SCOPE_KEY) if request is not None else None
        return datetime.fromtimestamp(at, UTC) if at is not None else self._now()

    def new_id(self, unix: int) -> str:
        with self._lock:
            return wire.generation_id(unix, self._ids)

    async def sleep(self, simulated_s: float) -> None:
        if simulated_s > 0 and not self.stopping.is_set():
            await asyncio.sleep(simulated_s * self.time_scale)


_AT_PATH = re.compile(r"^/at/(\d{1,12})(?=/)")
_AT_SCOPE_KEY = "canary.simulated_unix"


def base_url_at(base_url: str, when: datetime) -> str:
    """`base_url` (…/api/v1) of this simulator, served at simulated time `when` (whole seconds)."""
    root, sep, rest = base_url.partition("/api/v1")
    if not sep:
        raise ValueError(f"not a simulator base_url (no /api/v1): {base_url}")
    return f"{root}/at/{int(when.timestamp())}/api/v1{rest}"


class PathClock:
    """ASGI wrapper: `/at/<unix>/rest` is served as `/rest` at simulated time <unix> (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (m := _AT_PATH.match(scope["path"])):
            path = scope["path"][m.end():]
            scope = {**scope, "path": path, "raw_path": path.encode("ascii", "replace"),
                     _AT_SCOPE_KEY: int(m.group(1))}
        await self.app(scope, receive, send)


def _json(status: int, obj: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(wire.dumps(obj).encode("utf-8"), status, headers=headers, media_type="application/json")


def _bearer(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else ""


def build_app(state: SimulatorState) -> ASGIApp:
    async def models(request: Request) -> Response:
        fleet = state.fleet
        data = [catalog_wire.model_entry(m) for m in fleet.models]
        return _json(200, {"data": data, "total_count": len(data), "links": {"next": None}})

    async def providers(request: Request) -> Response:
        items = sorted(state.fleet.providers().items())
        return _json(200, {"data": [catalog_wire.provider_entry(slug, name) for slug, name in items]})

    async def endpoints(request: Request) -> Response:
        model_id = f"{request.path_params['author']}/{request.path_params['slug']}"
        model = state.fleet.model(model_id)
        if model is None:
            return _json(404, wire.error_body(f"No endpoints found for {model_id}.", 404, user=False))
        authenticated = _bearer(request) == state.api_key
        return _json(200, catalog_wire.endpoints_payload(model, authenticated=authenticated, now=state.now(request)))

    async def chat(request: Request) -> Response:
        return await _chat(state, request)

    return PathClock(
        Starlette(
            routes=[
                Route("/api/v1/models", models, methods=["GET"]),
                Route("/api/v1/providers", providers, methods=["GET"]),
                Route("/api/v1/models/{author}/{slug}/endpoints", endpoints, methods=["GET"]),
                Route("/api/v1/chat/completions", chat, methods=["POST"]),
            ]
        )
    )


async def _chat(state: SimulatorState, request: Request) -> Response:
    checked = await _checked_request(state, request)
    if isinstance(checked, Response):
        return checked
    body, model = checked
    seed = request_seed(body)
    try:
        chosen = route(model, body, validate_provider(body.get("provider")), seed)
    except RoutingError as exc:
        return _json(exc.status, wire.error_body(exc.message, exc.status, exc.metadata, user=False))

    now = state.now(request)
    stream = body.get("stream") is True
    plan, endpoint, fault = _plan_over(state, body, model, chosen, seed, now)
    if plan.http_error is not None:
        headers = {"Retry-After": wire.js_number(plan.retry_after_s)} if plan.retry_after_s else None
        return _json(
            plan.http_error, wire.upstream_error(plan.http_error, model.id, endpoint.provider_name), headers
        )
    return await _reply(state, request, body, model, plan, endpoint, fault, now, stream)


async def _checked_request(state: SimulatorState, request: Request) -> Response | tuple[dict[str, Any], ModelSpec]:
    """The request's body and model, or the error response OpenRouter gives (auth, JSON, model, messages)."""
    token = _bearer(request)
    if not token:
        return _json(401, wire.error_body("No auth credentials found", 401, user=False))
    if token != state.api_key:
        return _json(401, wire.error_body("User not found.", 401, user=False))
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        return _json(400, wire.error_body("Invalid JSON in request body", 400))
    if not isinstance(body, dict):
        return _json(400, wire.error_body("Request body must be a JSON object", 400))
    fleet = state.fleet
    model_id = body.get("model") or fleet.models[0].id
    model = fleet.model(model_id) if isinstance(model_id, str) else None
    if model is None:
        return _json(400, wire.error_body(f"{model_id} is not a valid model ID", 400))
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return _json(400, wire.error_body('Input required: specify "prompt" or "messages"', 400))
    return body, model


def _plan_over(state: SimulatorState, body: dict[str, Any], model: ModelSpec, chosen: Candidates, seed: int,
               now: datetime) -> tuple[Plan, EndpointSpec, Fault | None]:
    """The reply's plan on the route's first endpoint, or (with fallbacks) the next while one fails over HTTP."""
    stream = body.get("stream") is True
    structured = is_structured(body)
    lang = detect_language(last_user_text(body["messages"]))
    plan: Plan | None = None
    fault: Fault | None = None
    endpoint: EndpointSpec = chosen.candidates[0]
    for i, endpoint in enumerate(chosen.candidates):
        fault = select_fault(
            model.id,
            endpoint.tag,
            endpoint.faults,
            structured=structured,
            stream=stream,
            now=now,
            language=lang,
            counters=state.counters,
            tools=has_tools(body),
        )
        plan = plan_reply(body, model, endpoint, fault, seed)
        if plan.http_error is None or not chosen.allow_fallbacks or i + 1 == len(chosen.candidates):
            break
    assert plan is not None
    return plan, endpoint, fault


async def _reply(state: SimulatorState, request: Request, body: dict[str, Any], model: ModelSpec, plan: Plan,
                 endpoint: EndpointSpec, fault: Fault | None, now: datetime, stream: bool) -> Response:
    """The planned reply: a protocol fault's bytes, a stream, a slow JSON body, or the JSON body."""
    unix = int(now.timestamp())
    gen_id = state.new_id(unix)
    head = wire.chunk_head(gen_id, unix, model.id, plan.provider)
    prompt_tokens = sum(estimate_tokens(_message_text(m)) for m in body["messages"])
    headers = {"X-Generation-Id": gen_id, "Cache-Control": "no-cache"}
    player = ReplyPlayer(state, request, plan, head, endpoint, prompt_tokens)
    if fault is not None and fault.kind in PROTOCOL_KINDS:
        usage = wire.usage(prompt_tokens, estimate_tokens(plan.content), endpoint)
        fp, gone = endpoint.system_fingerprint, player._gone
        return protocol_response(
            fault.kind, fault.params, plan, head, fp, usage, stream=stream, headers=headers, gone=gone
        )
    if stream:
        headers["content-type"] = "text/event-stream"
        return StreamingResponse(player.events(), headers=headers)
    if plan.keepalive_s or plan.stall_s is not None or plan.cut_after is not None:
        headers["content-type"] = "application/json"
        return StreamingResponse(player.json_slowly(), headers=headers)
    await state.sleep(plan.first_delay_s)
    return Response(player.result_bytes(), 200, headers=headers, media_type="application/json")


def _message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else message
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
