"""The request handler of `POST /v1/chat/completions` (streaming and not): the body read (capped: 413 past
`max_body_bytes`), parsed with the savers (off the event loop when large: provider_canary/router/request.py), then
walked over the route's tiers (provider_canary/router/walk.py) while the client stays: a client that leaves before the
first chunk cancels the walk (499, nginx's "client closed request") and no further tier is asked."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from provider_canary.router import clients as client_rules
from provider_canary.router.access import SCOPE_KEY
from provider_canary.router.request import OFF_LOOP_BYTES, Refusal, prepare
from provider_canary.router.shell import RouterShell
from provider_canary.router.walk import walk
from provider_canary.router.walk_state import Walk, finish
from provider_canary.router.wire import error_response

log = logging.getLogger("router")

#: The status of a request whose client left before the first chunk (nginx's "client closed request").
CLIENT_GONE = 499


class BodyTooLarge(Exception):
    pass


async def chat(shell: RouterShell, request: Request) -> Response:
    assert shell.client is not None, "the app's lifespan did not run"
    settings = shell.routes.settings
    started, client = shell.clock.monotonic(), str(request.scope.get(SCOPE_KEY, ""))
    try:
        raw = await _read_capped(request, settings.max_body_bytes)
    except BodyTooLarge:
        shell.metrics.refuse("body_too_large", client)
        return error_response(413, f"the request body is over the router's limit of {settings.max_body_bytes} "
                                   "bytes (router.max_body_bytes)")
    api_key = client_rules.bearer_key(request.headers.get("authorization"))
    if len(raw) >= OFF_LOOP_BYTES:
        prepared = await asyncio.to_thread(prepare, raw, shell.routes, api_key)
    else:
        prepared = prepare(raw, shell.routes, api_key)
    if isinstance(prepared, Refusal):
        shell.metrics.refuse(prepared.reason, client)
        code = "model_not_found" if prepared.reason == "no_route" else prepared.reason
        return error_response(prepared.status, prepared.message, code=code,
                              param="model" if prepared.status == 404 else None)
    if prepared.pipeline.failed:
        log.warning("savers failed open on %s (request sent unmodified): %s", prepared.route.key,
                    prepared.pipeline.failed)
    w = Walk(prepared, request.headers, client, started)
    response = await _walk_while_connected(shell, w, request)
    if not isinstance(response, StreamingResponse):  # a stream is finished by its relay's end
        finish(shell, w)
    return response


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


async def _walk_while_connected(shell: RouterShell, w: Walk, request: Request) -> Response:
    """The walk, cancelled when the client leaves before it returns."""
    prepared = w.prepared
    walking = asyncio.ensure_future(walk(shell, w))
    gone = asyncio.ensure_future(_client_left(request.receive))
    try:
        await asyncio.wait((walking, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not walking.done():
            walking.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await gone
    try:
        return await walking
    except asyncio.CancelledError:
        if not gone.done() or gone.cancelled():
            raise  # the server itself is cancelling this request
    shell.metrics.client_gone(prepared.route.key)
    log.info("route %s: the client %sleft before the first chunk; no further tier asked", prepared.route.key,
             f"{w.client} " if w.client else "")
    w.ended(None, "client_gone")
    return Response(status_code=CLIENT_GONE)
