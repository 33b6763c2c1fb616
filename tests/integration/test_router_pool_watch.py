"""The pool watch (provider_canary/router/upstream.py `PoolWatch`): httpx's `trace` extension that tells the router's
own saturation from a tier's slowness needs only httpcore's first event, and leaves the request then, so the events
after it (headers, body, every read, the close) are not traced on the request path. A real httpx client against a
loopback HTTP/1.1 server."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import httpx
import pytest

from provider_canary.router.upstream import PoolWatch

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


class Counted(PoolWatch):
    def __init__(self, request: httpx.Request) -> None:
        super().__init__(request)
        self.events: list[str] = []

    async def __call__(self, event: str, info: Mapping[str, object]) -> None:
        self.events.append(event)
        await super().__call__(event, info)


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                   if line.startswith(b"content-length:")), 0)
    await reader.readexactly(length)
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    for chunk in (b"data: {}\n\n", b"data: [DONE]\n\n"):
        writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    writer.close()


def test_the_watch_hears_the_first_event_only_and_says_a_connection_was_taken() -> None:
    async def scenario() -> tuple[Counted, bytes]:
        server = await asyncio.start_server(_answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, httpx.AsyncClient(trust_env=False) as client:
            request = client.build_request("POST", f"http://127.0.0.1:{port}/v1/chat/completions", content=b"{}")
            watch = Counted(request)
            assert not watch.connected and request.extensions["trace"] is watch
            response = await client.send(request, stream=True)
            body = b"".join([part async for part in response.aiter_raw()])
            await response.aclose()
        return watch, body

    watch, body = asyncio.run(scenario())
    assert body == b"data: {}\n\ndata: [DONE]\n\n"
    assert watch.connected
    # httpcore's first step (the TCP connect) is traced as it starts and ends, and nothing after it
    assert watch.events == ["connection.connect_tcp.started", "connection.connect_tcp.complete"]
