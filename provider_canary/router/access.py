"""The router's door (ASGI middleware in front of every `/v1/*` path): who is asking, and whether they may now.

With at least one `[[client]]` in the routes file, a `/v1/*` request must carry `Authorization: Bearer <key>`
whose SHA-256 is a client's (or a route's `api_key_sha256`: such a key is a client too): otherwise 401
`invalid_api_key` in OpenAI's error shape, and nothing behind the door runs (no route, no tier, no upstream). A
client over its `requests_per_minute` gets 429 `rate_limit_exceeded` with `Retry-After`, before any tier is
asked, so it is never counted against an endpoint. Without clients every request passes, named by its route key
when it presents a route's key, else anonymous (`""`).

The client's name rides in the request's scope (`SCOPE_KEY`) to the walk over tiers (route events, logs) and is
the `client` label of the per-client counters. The key itself goes nowhere: it is hashed, compared, dropped.
`OPTIONS` (a CORS preflight, which never carries credentials) passes without a key. The rules are
provider_canary/router/clients.py's; this is the shell that applies them with the router's clock.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from provider_canary.router import clients as rules
from provider_canary.router.clients import Bucket
from provider_canary.router.metrics import RouterMetrics
from provider_canary.router.records import openai_error
from provider_canary.router.routes import Client, Routes
from tasks.runtime.clock import Clock

log = logging.getLogger("router")

#: The ASGI scope key holding the client's name for the handlers behind the door.
SCOPE_KEY = "canary.client"
#: The path whose requests a client's `requests_per_minute` counts (listing models costs nothing upstream).
LIMITED_PATH = "/v1/chat/completions"


def report(routes: Routes) -> None:
    """At start: whether the router asks for a key, and a loud line per client that no key can match (the
    placeholder digest deploy/routes.toml ships)."""
    if not routes.clients:
        log.info("no [[client]] in the routes file: the router serves whoever reaches it without a key")
        return
    log.info("the router asks every /v1/* request for a client key (%d clients, %d key routes)", len(routes.clients),
             len(routes.callers) - len(routes.clients))
    for c in routes.clients:
        if c.key_sha256 == rules.PLACEHOLDER_SHA256:
            log.warning("client %s has the placeholder key_sha256 (64 zeros): no key matches it; make one with "
                        "`canary router keys add %s` and replace its block", c.name, c.name)


def _authorization(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            return str(value.decode("latin-1"))
    return None


class Door:
    """ASGI middleware: `Door(app, callers=..., required=..., clock=..., metrics=...)` (Starlette `Middleware`)."""

    def __init__(self, app: ASGIApp, *, callers: Sequence[Client], required: bool, clock: Clock,
                 metrics: RouterMetrics) -> None:
        self.app = app
        self.callers = tuple(callers)
        self.required = required
        self.clock = clock
        self.metrics = metrics
        self.buckets: dict[str, Bucket] = {}  # client name -> its tokens (event loop only: no lock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/") or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        client = rules.identify(self.callers, _authorization(scope)) if self.callers else None
        if client is None and self.required:
            self.metrics.refuse("invalid_api_key", "")
            peer = scope.get("client") or ("?", 0)
            log.info("refused a request from %s: no client key matched (401 invalid_api_key)", peer[0])
            body = openai_error("Incorrect API key provided: send `Authorization: Bearer <key>` with a key this "
                                "router knows (a [[client]] of its routes file).", "invalid_request_error",
                                "invalid_api_key")
            await JSONResponse(body, 401, {"www-authenticate": 'Bearer realm="canary-router"'})(scope, receive, send)
            return
        name = client.name if client is not None else ""
        if client is not None and client.requests_per_minute and scope["path"] == LIMITED_PATH:
            bucket, wait = rules.take(self.buckets.get(name), client.requests_per_minute, self.clock.monotonic())
            self.buckets[name] = bucket
            if wait is not None:
                await self._over_limit(client, wait, scope, receive, send)
                return
        scope[SCOPE_KEY] = name
        self.metrics.let_in(name)
        try:
            await self.app(scope, receive, send)
        finally:
            self.metrics.in_flight.dec()

    async def _over_limit(self, client: Client, wait: float, scope: Scope, receive: Receive, send: Send) -> None:
        self.metrics.refuse("rate_limit_exceeded", client.name)
        after = rules.retry_after(wait)
        log.info("client %s is over its %d requests per minute: 429, retry in %s s", client.name,
                 client.requests_per_minute, after)
        body = openai_error(f"Rate limit reached for client {client.name} on requests per min (RPM): Limit "
                            f"{client.requests_per_minute}. Please try again in {after}s.", "requests",
                            "rate_limit_exceeded")
        await JSONResponse(body, 429, {"retry-after": after})(scope, receive, send)
