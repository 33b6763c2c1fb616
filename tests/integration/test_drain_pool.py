"""The drain leaves httpcore's pool clean (tasks/probe/drain.py): streams whose body ends right at the drain's bound,
read by the real httpx client from a loopback keep-alive upstream, leave no request behind in the pool. With
`asyncio.timeout` as the bound (the drain before), 8-14 of 200 such streams stayed in the pool for ever, each holding
a connection slot (measured by swapping the bound in `_left_in_pool`, three runs of three): the router's pool ran out
under load (503 `router_overloaded`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import httpx
import pytest

from tasks.probe.drain import DRAIN_CAP_BYTES, DRAIN_S, drain
from tests.support.keepalive_server import KeepAliveServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

STREAMS = 200


@pytest.fixture(scope="module")
def upstream() -> Iterator[KeepAliveServer]:
    server = KeepAliveServer(stay_open=False, tail_s=(DRAIN_S * 0.9, DRAIN_S * 1.1))  # the end comes at the bound
    yield server
    server.close()


async def _left_in_pool(url: str, bound: Callable[[AsyncIterator[bytes]], Awaitable[None]]) -> tuple[int, int]:
    """(streams read to [DONE], requests still in httpcore's pool after all ended)."""
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=None)) as client:
        async def one() -> bool:
            async with client.stream("POST", url + "/chat/completions", content=b"{}") as response:
                chunks = response.aiter_raw().__aiter__()
                first = await chunks.__anext__()
                await bound(chunks)
            return b"data: [DONE]" in first

        done = await asyncio.gather(*(one() for _ in range(STREAMS)))
        return sum(done), len(client._transport._pool._requests)  # type: ignore[attr-defined]


def test_streams_ending_at_the_bound_leave_no_request_in_the_pool(upstream: KeepAliveServer) -> None:
    assert asyncio.run(_left_in_pool(upstream.url, drain)) == (STREAMS, 0)


async def _endless() -> AsyncIterator[bytes]:
    while True:
        yield b"x" * 1024
        await asyncio.sleep(0)


def test_a_body_that_goes_on_is_cut_at_the_byte_cap() -> None:
    read = 0

    async def counted() -> AsyncIterator[bytes]:
        nonlocal read
        async for piece in _endless():
            read += len(piece)
            yield piece

    asyncio.run(drain(counted()))
    assert DRAIN_CAP_BYTES < read <= DRAIN_CAP_BYTES + 2048
