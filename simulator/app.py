"""The Starlette app: OpenRouter's catalog and chat-completions routes over a swappable fleet."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from simulator import catalog_wire, wire
from simulator.faults import PROTOCOL_KINDS, FaultCounters, select_fault
from simulator.fleet import EndpointSpec, Fleet
from simulator.language import detect_language
from simulator.plan import Plan, has_tools, is_structured, last_user_text, plan_reply, request_seed
from simulator.protocol import protocol_response
from simulator.routing import RoutingError, route, validate_provider
from simulator.text import estimate_tokens

_MIN_SLEEP_S = 0.002


class CutConnection(Exception):
    """Raised inside a response body to drop the TCP connection mid-response (die_after_tokens, stalls)."""


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

    def now(self) -> datetime:
        return self._now()

    def new_id(self, unix: int) -> str:
        with self._lock:
            return wire.generation_id(unix, self._ids)

    async def sleep(self, simulated_s: float) -> None:
        if simulated_s > 0 and not self.stopping.is_set():
            await asyncio.sleep(simulated_s * self.time_scale)


def _json(status: int, obj: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(wire.dumps(obj).encode("utf-8"), status, headers=headers, media_type="application/json")


def _bearer(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else ""


def build_app(state: SimulatorState) -> Starlette:
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
        return _json(200, catalog_wire.endpoints_payload(model, authenticated=authenticated))

    async def chat(request: Request) -> Response:
        return await _chat(state, request)

    return Starlette(
        routes=[
            Route("/api/v1/models", models, methods=["GET"]),
            Route("/api/v1/providers", providers, methods=["GET"]),
            Route("/api/v1/models/{author}/{slug}/endpoints", endpoints, methods=["GET"]),
            Route("/api/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


async def _chat(state: SimulatorState, request: Request) -> Response:
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
    seed = request_seed(body)
    try:
        chosen = route(model, body, validate_provider(body.get("provider")), seed)
    except RoutingError as exc:
        return _json(exc.status, wire.error_body(exc.message, exc.status, exc.metadata, user=False))

    now = state.now()
    stream = body.get("stream") is True
    structured = is_structured(body)
    lang = detect_language(last_user_text(body["messages"]))
    plan: Plan | None = None
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
    if plan.http_error is not None:
        headers = {"Retry-After": wire.js_number(plan.retry_after_s)} if plan.retry_after_s else None
        return _json(
            plan.http_error, wire.upstream_error(plan.http_error, model.id, endpoint.provider_name), headers
        )

    unix = int(now.timestamp())
    gen_id = state.new_id(unix)
    head = wire.chunk_head(gen_id, unix, model.id, plan.provider)
    prompt_tokens = sum(estimate_tokens(_message_text(m)) for m in body["messages"])
    headers = {"X-Generation-Id": gen_id, "Cache-Control": "no-cache"}
    player = _Player(state, request, plan, head, endpoint, prompt_tokens)
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


class _Player:
    """Plays a Plan as SSE events or as a (possibly slow, possibly cut) JSON body."""

    def __init__(
        self,
        state: SimulatorState,
        request: Request,
        plan: Plan,
        head: dict[str, Any],
        ep: EndpointSpec,
        prompt_tokens: int,
    ) -> None:
        self.state, self.request, self.plan, self.head, self.ep = state, request, plan, head, ep
        self.prompt_tokens = prompt_tokens
        self._debt_s = 0.0

    async def _sleep(self, simulated_s: float) -> None:
        """Scaled sleep; waits under 2 ms are pooled (an event-loop sleep costs ~1 ms whatever its length)."""
        self._debt_s += simulated_s * self.state.time_scale
        if self._debt_s >= _MIN_SLEEP_S and not self.state.stopping.is_set():
            await asyncio.sleep(self._debt_s)
            self._debt_s = 0.0

    async def _gone(self) -> bool:
        """Has the client hung up? (Writes to a closed socket are silently dropped, so ask.)"""
        return self.state.stopping.is_set() or await self.request.is_disconnected()

    def _usage(self, content: str) -> dict[str, Any]:
        produced = content + "".join(c.name + c.arguments for c in self.plan.tool_calls)
        return wire.usage(self.prompt_tokens, estimate_tokens(produced), self.ep)

    def _stream_frames(self) -> list[bytes]:
        """The data frames between the first chunk and the finish chunk: text pieces or tool-call deltas."""
        head, fp = self.head, self.ep.system_fingerprint
        if self.plan.tool_calls:
            return [
                wire.sse(wire.tool_call_chunk(head, fp, d))
                for d in wire.tool_call_deltas(self.plan.tool_calls)
            ]
        return [wire.sse(wire.chunk(head, fp, piece)) for piece in self.plan.pieces]

    async def _stall(self, simulated_s: float) -> None:
        deadline = time.monotonic() + simulated_s * self.state.time_scale
        while time.monotonic() < deadline and not self.state.stopping.is_set():
            if await self.request.is_disconnected():
                return
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    async def _delay(self, comments: int, keepalive: bytes) -> AsyncIterator[bytes]:
        """The wait before the first text: keep-alives every keepalive_s, or the first comments spread."""
        plan, delay = self.plan, self.plan.first_delay_s
        if plan.keepalive_s:
            waited = 0.0
            while delay - waited > plan.keepalive_s:
                await self._sleep(plan.keepalive_s)
                waited += plan.keepalive_s
                if await self._gone():
                    return
                yield keepalive
            await self._sleep(delay - waited)
            return
        step = delay / comments
        for _ in range(comments - 1):
            await self._sleep(step)
            yield keepalive
        await self._sleep(step)

    async def events(self) -> AsyncIterator[bytes]:
        plan, head, fp = self.plan, self.head, self.ep.system_fingerprint
        if plan.stall_s is not None:
            await self._stall(plan.stall_s)
            raise CutConnection("stall_after_headers")
        yield wire.KEEPALIVE
        if plan.role_only_first:
            yield wire.sse(wire.chunk(head, fp, ""))
        async for comment in self._delay(plan.comments_before, wire.KEEPALIVE):
            yield comment
        sent = ""
        pieces = plan.pieces if not plan.tool_calls else ("",) * len(self._stream_frames())
        for i, (piece, frame) in enumerate(zip(pieces, self._stream_frames(), strict=True)):
            if plan.cut_after is not None and i >= plan.cut_after:
                raise CutConnection("die_after_tokens")
            if plan.error_after is not None and i >= plan.error_after:
                break
            if i:
                await self._sleep(plan.chunk_interval_s)
            if i % 4 == 3 and await self._gone():
                return
            yield frame
            sent += piece
        if plan.cut_after is not None:
            raise CutConnection("die_after_tokens")
        if plan.error_after is not None:
            yield wire.sse(wire.midstream_error_chunk(head, plan.error_code, _error_message(plan.error_code)))
            if plan.error_done:
                yield wire.DONE
            return
        yield wire.sse(wire.chunk(head, fp, "", plan.finish_reason, plan.native_finish_reason))
        usage = self._usage(sent)
        yield wire.sse(wire.chunk(head, fp, "", plan.finish_reason, plan.native_finish_reason, usage))
        yield wire.DONE

    def result_bytes(self) -> bytes:
        plan, fp = self.plan, self.ep.system_fingerprint
        if plan.error_after is not None:
            content = "".join(plan.pieces[: plan.error_after])
            error = {
                "code": plan.error_code,
                "message": _error_message(plan.error_code),
                "metadata": {"error_type": wire.ERROR_TYPES.get(plan.error_code, "server")},
            }
            obj = wire.chat_result(self.head, fp, content, "error", "error", self._usage(content), error)
        else:
            obj = wire.chat_result(
                self.head,
                fp,
                plan.content,
                plan.finish_reason,
                plan.native_finish_reason,
                self._usage(plan.content),
                tool_calls=wire.message_tool_calls(plan.tool_calls),
            )
        return wire.dumps(obj).encode("utf-8")

    async def json_slowly(self) -> AsyncIterator[bytes]:
        """Non-streaming with bare-newline keep-alives, a stall, or a cut in the middle of the body."""
        plan = self.plan
        if plan.stall_s is not None:
            await self._stall(plan.stall_s)
            raise CutConnection("stall_after_headers")
        async for newline in self._delay(1, b"\n"):
            yield newline
        body = self.result_bytes()
        if plan.cut_after is not None:
            yield body[: max(1, len(body) * 2 // 5)]
            raise CutConnection("die_after_tokens")
        yield body


def _message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else message
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _error_message(code: int) -> str:
    return {
        408: "Request timed out",
        429: "Rate limit exceeded",
        500: "Internal Server Error",
        502: "Provider returned error",
        503: "Provider is overloaded",
        524: "Provider timed out",
        529: "Provider is overloaded",
    }.get(code, "Provider returned error")
