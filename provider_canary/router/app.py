"""The router's Starlette app: an OpenAI-compatible endpoint in front of the tiers (docs/requirements.md 6).

The routes and where each is handled:

- `POST /v1/chat/completions` (streaming and not): provider_canary/router/chat.py reads the body (capped: 413 past
  `max_body_bytes`; parsed, with the savers, off the event loop when large: provider_canary/router/request.py) and walks
  the route's tiers in key order (provider_canary/router/walk.py, tiers.py), merging the canary's ignore list
  (provider_canary/router/ignore.py, payload.py). A stream commits only on its first content chunk
  (provider_canary/router/stream.py, upstream.py) and is relayed by provider_canary/router/stream_response.py; an answer
  that finished empty fails over while another tier could answer. Every answer passed is judged
  (provider_canary/router/answer.py, judging.py): a non-streamed one before it is sent
  (provider_canary/router/whole_response.py: one that fails its tools or structured check is asked of the next tier), a
  streamed one after its last byte. A client that leaves before the first chunk cancels the walk. A tier whose circuit
  is open is skipped (provider_canary/router/breaker.py, circuits.py). The tier keys are masked out of every byte
  relayed (provider_canary/router/masking.py).
- `GET /v1/models` (and `/v1/models/{id}`) lists the routes keyed by model name, unknown paths answer JSON 404,
  CORS when configured (provider_canary/router/wire.py).
- `GET /healthz` reports cooldowns, circuits, sink backlogs, the judging and the canary's lists; `GET /livez` says
  the process answers, `GET /readyz` whether it is ready for traffic (provider_canary/router/status.py, readiness.py).
- `GET /metrics` is prometheus_client's own ASGI app over the router's registry.

In front of every `/v1/*` path the door (provider_canary/router/access.py) asks for a client key when the routes file
names clients, and applies their rate limits. The state every route reads is one `RouterShell`
(provider_canary/router/shell.py); the app's lifespan opens its upstream client and runs the flusher, the judging and
the list watchers.

What happened on each tier is said once, as a `TierAttempt` (provider_canary/router/attempts.py, walk_state.py), to one
observer that route events, metrics, live counts and cooldowns hang on. Client API keys appear only as `key:<sha256
prefix>` or as their `[[client]]` name; tier keys come from the environment and are sent only in the upstream
Authorization header. No prompt or answer text is stored or logged. When the router's own upstream pool has no
connection free (`max_connections`), the walk ends with 503 `router_overloaded`: the router's saturation, never
a tier's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from functools import partial

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route as HttpRoute

from provider_canary.router import status
from provider_canary.router.access import Door
from provider_canary.router.chat import chat as handle_chat
from provider_canary.router.list_watch import watch_missing
from provider_canary.router.route_events import flush_all
from provider_canary.router.shell import RouterShell
from provider_canary.router.wire import EXCEPTION_HANDLERS, cors_middleware, error_response, model_retrieve, models_list
from tasks.probe.fair_pool import FairTransport

log = logging.getLogger("router")

#: Seconds the judging may take at shutdown to finish the streamed answers still queued.
DRAIN_S = 5.0
#: Seconds the last flush waits for a busy DuckDB file before keeping its records on disk for the next start.
SHUTDOWN_LOCK_TIMEOUT_S = 1.0


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
        # the fair pool: kept-alive connections each given to one request (tasks/probe/fair_pool.py)
        async with httpx.AsyncClient(timeout=timeout, transport=FairTransport(limits), trust_env=False) as client:
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
            return await handle_chat(shell, request)
        except Exception as exc:  # never a traceback to the client
            log.error("router error: %s: %s", type(exc).__name__, str(exc)[:200])
            return error_response(500, f"router error: {type(exc).__name__}")

    async def models(request: Request) -> JSONResponse:
        return models_list(shell.routes)

    async def model(request: Request) -> JSONResponse:
        return model_retrieve(shell.routes, request.path_params["model"])

    app = Starlette(
        routes=[
            HttpRoute("/v1/chat/completions", chat, methods=["POST"]),
            HttpRoute("/v1/models", models, methods=["GET"]),
            HttpRoute("/v1/models/{model:path}", model, methods=["GET"]),
            HttpRoute("/healthz", partial(status.health, shell), methods=["GET"]),
            HttpRoute("/livez", partial(status.livez, shell), methods=["GET"]),
            HttpRoute("/readyz", partial(status.readyz, shell), methods=["GET"]),
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
