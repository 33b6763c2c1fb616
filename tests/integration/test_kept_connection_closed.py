"""A kept-alive connection the server closes as a request goes out (tasks/probe/fair_pool.py): the request is sent
again, once, on a new connection, and the answer is the server's. Loopback upstreams that answer one request per
connection and then close (or reset) the connection as the next request comes in, as a server does when its
keep-alive timeout meets a request in flight; read through the real httpx client over the fair pool, the probe
worker's stamped one and the router's plain one. Before the retry, the second request raised
`RemoteProtocolError: Server disconnected without sending a response` (the probe recorded a healthy endpoint's
`stream_cut`) or a `ReadError`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from tasks.probe.fair_pool import FairTransport
from tasks.probe.sockets import new_async_client
from tests.support.keepalive_server import KeepAliveServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _fair_client() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=8)
    return httpx.AsyncClient(timeout=10, limits=limits, transport=FairTransport(limits))


CLIENTS: dict[str, Callable[[], httpx.AsyncClient]] = {"router's": _fair_client, "probe's": new_async_client}


@pytest.fixture(params=["close", "reset"])
def one_per_connection(request: pytest.FixtureRequest) -> Iterator[KeepAliveServer]:
    server = KeepAliveServer(stay_open=False, answers=1, reset=request.param == "reset")
    yield server
    server.close()


async def _post(client: httpx.AsyncClient, url: str, content: bytes | AsyncIterator[bytes] = b"{}") -> bytes:
    async with client.stream("POST", url + "/chat/completions", content=content, timeout=10) as response:
        return await response.aread()


@pytest.mark.parametrize("kind", sorted(CLIENTS))
def test_a_request_on_a_kept_connection_closed_under_it_is_answered(
        kind: str, one_per_connection: KeepAliveServer) -> None:
    async def three_in_a_row() -> list[bytes]:
        async with CLIENTS[kind]() as client:
            return [await _post(client, one_per_connection.url) for _ in range(3)]

    bodies = asyncio.run(three_in_a_row())
    assert all(b"data: [DONE]" in body for body in bodies)
    assert one_per_connection.connections == 3  # the 2nd and 3rd each met a kept one's close, then went on a new one


@pytest.mark.parametrize("kind", sorted(CLIENTS))
def test_a_new_connection_closed_unanswered_is_the_servers_answer(kind: str) -> None:
    server = KeepAliveServer(stay_open=False, answers=0)
    try:
        async def one() -> bytes:
            async with CLIENTS[kind]() as client:
                return await _post(client, server.url)

        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            asyncio.run(one())
        assert server.connections == 1  # not sent again
    finally:
        server.close()


def test_a_body_that_cannot_be_sent_again_is_not(one_per_connection: KeepAliveServer) -> None:
    async def streamed() -> AsyncIterator[bytes]:
        yield b"{}"

    async def kept_then_streamed() -> None:
        async with _fair_client() as client:
            assert b"data: [DONE]" in await _post(client, one_per_connection.url)
            await _post(client, one_per_connection.url, content=streamed())

    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        asyncio.run(kept_then_streamed())
    assert one_per_connection.connections == 1
