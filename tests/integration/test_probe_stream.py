"""The probe worker's sockets (tasks/probe/sockets.py): a block is stamped when the event loop reads it from the
socket, not when the probe's task gets round to parsing it, and the request's side when it was written. A loop
carrying hundreds of streams runs their tasks one after another; a stamp taken in the task would add that queue to
the provider's TTFT (issue 32.2)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tasks.probe.sockets import arrival_of, new_async_client, sent_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]

#: The reply's head and its first body chunk, written to the socket at once (so they arrive together).
REPLY = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
         b"6\r\nfirst\n\r\n")
BUSY_S = 0.3


@pytest.fixture
def server() -> Iterator[tuple[str, threading.Event]]:
    """A loopback server answering one request with `REPLY`, then the rest once `more` is set."""
    listener = socket.create_server(("127.0.0.1", 0))
    more = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            conn.sendall(REPLY)
            more.wait(10)
            conn.sendall(b"5\r\nlast\n\r\n0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/", more
    more.set()
    thread.join(5)
    listener.close()


def test_a_block_keeps_the_time_the_loop_read_it_while_its_task_was_busy(server: tuple[str, threading.Event]
                                                                         ) -> None:
    url, more = server

    async def probe() -> tuple[float | None, float | None, float, float]:
        async with new_async_client() as client:
            async with client.stream("GET", url) as response:
                sent = sent_of(response)
                before = time.monotonic()
                await asyncio.sleep(BUSY_S)  # the task's turn comes late (other streams' parsing, in a real worker)
                chunks = response.aiter_bytes()
                assert await anext(chunks) == b"first\n"
                read = time.monotonic()
                arrived = arrival_of(response)
                more.set()
                assert [c async for c in chunks] == [b"last\n"]
        return sent, arrived, before, read

    sent, arrived, before, read = asyncio.run(probe())
    assert sent is not None and arrived is not None
    assert sent <= arrived <= before  # the first chunk came with the head: read by the loop before the task slept
    assert read - arrived >= BUSY_S  # the task's late turn is not in the stamp


def test_a_plain_client_has_no_stamps(server: tuple[str, threading.Event]) -> None:
    url, more = server

    async def probe() -> tuple[float | None, float | None]:
        more.set()
        async with httpx.AsyncClient() as client, client.stream("GET", url) as response:
            await response.aread()
            return sent_of(response), arrival_of(response)

    assert asyncio.run(probe()) == (None, None)  # tasks/probe/attempt.py then uses its own clock
