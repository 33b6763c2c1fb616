"""The probe worker's sockets: every block a socket receives stamped when the event loop reads it (issue 32.2).

    client = new_async_client(ssl_context)             # an httpx.AsyncClient whose connections are `StampedStream`s
    ... async for data in response.aiter_bytes():
            arrived = arrival_of(response)              # the monotonic time the block holding `data` was read

An event loop carrying hundreds of streams runs their tasks one after another: a task that wakes to parse a block
can run tens of milliseconds after the block came in, behind the other streams' parsing. Stamping in the task would
measure that queue as the provider's TTFT. So the connection is an asyncio Protocol (`_Receiver`) whose
`data_received` (called by the loop as it reads the socket, before any task runs) stamps each block and queues it;
`StampedStream.read` hands the blocks to httpcore one at a time, so every body chunk httpx yields comes from one
block, and `arrival_of(response)` is that block's stamp. The request's side is stamped the same way: `sent_of(response)`
is when its last bytes were written to the socket (a busy loop may start a request's task, connect and write
later than the task was created: that wait is the canary's, not the provider's). What is left of the loop's lag is
the part of one loop iteration before the socket was read, not the queue of tasks.

This is httpcore's `AsyncNetworkBackend` interface (the one httpx's own asyncio backend implements), plugged into
an `httpx.AsyncHTTPTransport`; TLS is the loop's (`loop.start_tls`), errors are httpcore's, so httpx maps them as
always (tasks/probe/http_errors.py). A block queue over `PAUSE_BYTES` pauses the socket until the reader catches up (a
peer cannot make the worker hold more than that beyond what the probe reads). A request through a proxy (HTTPS_PROXY
and friends) goes through httpx's own transport: unstamped, read time instead.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import ssl
import time
from typing import Any

import httpcore
import httpx

from tasks.probe.fair_pool import FairTransport

#: Bytes queued in one connection before its socket is paused (resumed once the reader drained half of it).
PAUSE_BYTES = 1024 * 1024


class _Receiver(asyncio.Protocol):
    """One connection's receiving side: blocks stamped as the loop reads them, the end, the error, the drain."""

    def __init__(self) -> None:
        self.blocks: collections.deque[tuple[float, bytes]] = collections.deque()
        self.queued = 0
        self.eof = False
        self.error: Exception | None = None
        self.transport: asyncio.Transport | None = None
        self._wake: asyncio.Future[None] | None = None
        self._paused = False
        self._writable: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.blocks.append((time.monotonic(), data))
        self.queued += len(data)
        if self.queued > PAUSE_BYTES and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._notify()

    def eof_received(self) -> bool | None:
        self.eof = True
        self._notify()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._notify()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def next_block(self, max_bytes: int) -> tuple[float, bytes]:
        """The oldest block (at most `max_bytes` of it; the rest keeps its stamp), or (now, b"") at the end."""
        while not self.blocks:
            if self.error is not None:
                raise httpcore.ReadError(str(self.error) or type(self.error).__name__)
            if self.eof:
                return time.monotonic(), b""
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake
        stamp, data = self.blocks.popleft()
        if len(data) > max_bytes:
            self.blocks.appendleft((stamp, data[max_bytes:]))
            data = data[:max_bytes]
        self.queued -= len(data)
        if self._paused and self.queued <= PAUSE_BYTES // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return stamp, data

    async def drained(self) -> None:
        if self._writable is not None:
            await self._writable


class StampedStream(httpcore.AsyncNetworkStream):
    """httpcore's view of one connection (module docstring); `arrival` is the stamp of the last block read."""

    def __init__(self, transport: asyncio.Transport, receiver: _Receiver) -> None:
        self._transport, self._receiver = transport, receiver
        self.arrival: float | None = None
        self.sent: float | None = None  # when the latest write went to the socket (a request's last one: sent)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                self.arrival, data = await self._receiver.next_block(max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout("timed out while receiving data") from None
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        try:
            async with asyncio.timeout(timeout):
                self._transport.write(buffer)
                self.sent = time.monotonic()
                await self._receiver.drained()
        except TimeoutError:
            raise httpcore.WriteTimeout("timed out while sending data") from None
        except (OSError, RuntimeError) as exc:
            raise httpcore.WriteError(str(exc)) from exc
        if self._receiver.error is not None:
            raise httpcore.WriteError(str(self._receiver.error))

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                tls = await loop.start_tls(self._transport, self._receiver, ssl_context,
                                           server_hostname=server_hostname)
        except TimeoutError:
            self._transport.close()
            raise httpcore.ConnectTimeout("timed out during the TLS handshake") from None
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc)) from exc
        if tls is None:  # pragma: no cover - only a closed transport gives none
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        self._transport = tls  # type: ignore[assignment]
        self._receiver.transport = tls  # type: ignore[assignment]
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # an idle keep-alive connection the peer closed (or wrote to): not reusable
            return bool(self._receiver.blocks) or self._receiver.eof or self._transport.is_closing()
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        return self._transport.get_extra_info(info)  # "ssl_object", "socket"


class StampingBackend(httpcore.AsyncNetworkBackend):
    """Connections as `StampedStream`s on the running loop."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        receiver = _Receiver()
        try:
            async with asyncio.timeout(timeout):
                transport, _ = await loop.create_connection(
                    lambda: receiver, host, port, local_addr=(local_address, 0) if local_address else None)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"timed out connecting to {host}:{port}") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in socket_options or ():
                sock.setsockopt(*option)
        return StampedStream(transport, receiver)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not used by the probe worker")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class StampedTransport(FairTransport):
    """httpx's transport (its request and error mapping) over a fair pool (tasks/probe/fair_pool.py) of
    `StampedStream`s."""

    def __init__(self, ssl_context: ssl.SSLContext, limits: httpx.Limits) -> None:
        super().__init__(limits, ssl_context, network_backend=StampingBackend())


def new_async_client(ssl_context: ssl.SSLContext | None = None, streams: int = 8) -> httpx.AsyncClient:
    """An httpx.AsyncClient whose connections stamp their blocks (module docstring), sized for `streams` requests
    at once."""
    ctx = ssl_context or httpx.create_ssl_context()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=streams)
    return httpx.AsyncClient(verify=ctx, limits=limits, transport=StampedTransport(ctx, limits))


def sent_of(response: httpx.Response) -> float | None:
    """The monotonic time the response's request was written to the socket (its last write), None when not a
    stamped connection."""
    stream = response.extensions.get("network_stream")
    return stream.sent if isinstance(stream, StampedStream) else None


def arrival_of(response: httpx.Response) -> float | None:
    """The monotonic time the block behind the response's latest body chunk was read (None: not a stamped
    connection, e.g. through a proxy)."""
    stream = response.extensions.get("network_stream")
    return stream.arrival if isinstance(stream, StampedStream) else None
