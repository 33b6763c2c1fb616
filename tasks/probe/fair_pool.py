"""httpcore's connection pool with a fair assignment pass: one request per kept-alive HTTP/1.1 connection.

httpcore 1.0.9 (`AsyncConnectionPool._assign_requests_to_connections`) gives a connection to each queued request
in one pass, but an idle HTTP/1.1 connection stays "available" until the request it was given starts on it. So
every request queued in that pass gets the same idle connection; one wins, the others raise
`ConnectionNotAvailable` inside the pool, are queued again, and again all get the first idle connection
(encode/httpcore#822). A pool that keeps connections (the router and the probe read a stream's body to its end:
tasks/probe/drain.py) always has idle ones, so under a burst a request waits for one round of this herd per request
ahead of it, each round a turn of a loaded event loop: at 50 judged streams/s on 2 cores under load, 70-90 of 600
requests waited out the router's 5 s connect budget for a connection with idle ones in the pool (503
`router_overloaded`). The same pass also counts every connection, not the idle ones, against
`max_keepalive_connections`, and may close an idle connection it has just given to a request (encode/httpcore#1110).

`FairPool` keeps httpcore's rules otherwise and changes only that pass: a connection given to a request that has
not ended is spoken for (neither given again nor closed as surplus), surplus is counted over the idle connections
that are not spoken for, and the candidates are listed once per pass. HTTP/1.1 only: HTTP/2 multiplexes requests
on one connection, so with `http2` the pool is httpcore's own.

**A kept connection the server closed as the request went out** is sent again, once, on a new connection. A server
closes an idle connection at its own keep-alive timeout (uvicorn's and Node's: 5 s, httpx's expiry too); a request
written in that instant meets the close before any response: h11's "Server disconnected without sending a
response", or a reset. The server never answered, so it is the connection's fault, not the provider's: without
this, the probe recorded a healthy endpoint's `stream_cut` (0-2 per 9,000 attempts on the simulator) and the router
failed over from a healthy tier. Only a request that went out on a reused connection, failed before its response
head, and has a body that can be sent again (bytes) is retried; a new connection that fails is the server's answer.
"""

from __future__ import annotations

import ssl
import weakref

import httpcore
import httpx
from httpcore._async.interfaces import AsyncConnectionInterface
from httpcore._models import ByteStream as CoreBytes

__all__ = ["FairPool", "FairTransport"]

#: What a reused connection's close meets before any response: EOF (h11's "Server disconnected without sending a
#: response"), a reset while reading, or a write into the closed socket.
_CLOSED_UNDER_US = (httpcore.RemoteProtocolError, httpcore.ReadError, httpcore.WriteError)


def _replayable(request: httpcore.Request) -> bool:
    """Whether the request's body can be sent again: bytes (httpx's for `content=bytes` and `json=`), not a stream."""
    return isinstance(request.stream, (httpx.ByteStream, CoreBytes))


class FairPool(httpcore.AsyncConnectionPool):
    """httpcore.AsyncConnectionPool whose assignment gives a kept HTTP/1.1 connection to one request (module
    docstring)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._on_kept: weakref.WeakSet[httpcore.Request] = weakref.WeakSet()  # last given a kept connection
        self._new_only: weakref.WeakSet[httpcore.Request] = weakref.WeakSet()  # sent again: a new connection

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        try:
            return await super().handle_async_request(request)
        except _CLOSED_UNDER_US:
            if request not in self._on_kept or not _replayable(request):
                raise
        self._on_kept.discard(request)
        self._new_only.add(request)  # once, on a new connection (module docstring)
        return await super().handle_async_request(request)

    def _assign_requests_to_connections(self) -> list[AsyncConnectionInterface]:
        if self._http2:
            return super()._assign_requests_to_connections()
        spoken_for = {id(r.connection) for r in self._requests if r.connection is not None}
        closing = self._let_go(spoken_for)
        return closing + self._hand_out(spoken_for)

    def _spare(self, connection: AsyncConnectionInterface, spoken_for: set[int]) -> bool:
        return connection.is_idle() and id(connection) not in spoken_for

    def _let_go(self, spoken_for: set[int]) -> list[AsyncConnectionInterface]:
        """Drop the closed connections; close the expired ones and the spare idle ones past the keep-alive limit."""
        closing: list[AsyncConnectionInterface] = []
        surplus = sum(1 for c in self._connections if self._spare(c, spoken_for)) - self._max_keepalive_connections
        for connection in list(self._connections):
            if connection.is_closed():
                self._connections.remove(connection)
            elif connection.has_expired():
                self._connections.remove(connection)
                closing.append(connection)
            elif surplus > 0 and self._spare(connection, spoken_for):
                self._connections.remove(connection)
                closing.append(connection)
                surplus -= 1
        return closing

    def _hand_out(self, spoken_for: set[int]) -> list[AsyncConnectionInterface]:
        """Give each queued request a connection of its own: an available one not spoken for, else a new one, else
        (the pool full) a new one in place of a spare idle one; none free: it stays queued. Returns those closed."""
        closing: list[AsyncConnectionInterface] = []
        available = [c for c in self._connections if c.is_available() and id(c) not in spoken_for]
        for pool_request in [r for r in self._requests if r.is_queued()]:
            request = pool_request.request
            origin = request.url.origin
            kept = available if request not in self._new_only else []
            connection = next((c for c in kept if c.can_handle_request(origin)), None)
            if connection is not None:
                available.remove(connection)
                self._on_kept.add(request)
            else:
                self._on_kept.discard(request)
                full = len(self._connections) >= self._max_connections
                idle = next((c for c in self._connections if self._spare(c, spoken_for)), None) if full else None
                if full and idle is None:
                    continue  # stays queued until a connection frees
                if idle is not None:  # the pool is full: a new connection in its place
                    self._connections.remove(idle)
                    closing.append(idle)
                    if idle in available:
                        available.remove(idle)
                connection = self.create_connection(origin)
                self._connections.append(connection)
            pool_request.assign_to_connection(connection)
            spoken_for.add(id(connection))
        return closing


class FairTransport(httpx.AsyncHTTPTransport):
    """httpx's transport (its request and error mapping) over a `FairPool`; `network_backend` as httpcore takes it."""

    def __init__(self, limits: httpx.Limits, ssl_context: ssl.SSLContext | None = None,
                 network_backend: httpcore.AsyncNetworkBackend | None = None) -> None:
        ctx = ssl_context or httpx.create_ssl_context()
        super().__init__(verify=ctx, limits=limits)
        # httpx builds its pool itself and takes no other: the same pool, with the fair pass
        self._pool = FairPool(
            ssl_context=ctx, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=network_backend)
