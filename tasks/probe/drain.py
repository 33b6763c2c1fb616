"""Reading the rest of a streamed body after its [DONE], so httpcore keeps the connection (the probe and the router).

httpcore returns a connection to its pool only when the response was read to its end; a stream left after its
[DONE] event (normally with only the chunked body's last chunk still unread, often in the block that held [DONE])
is closed instead, and the next request opens a new connection: a TCP and TLS handshake each against OpenRouter.
`drain` reads that rest, for at most `DRAIN_S` and `DRAIN_CAP_BYTES`: a body that goes on after [DONE] is cut.

The bound is anyio's `move_on_after`, not `asyncio.timeout`. httpx closes a response when its body ends, inside
the loop that reads it, and httpcore shields that close from anyio's cancel scopes only: an `asyncio.timeout` that
runs out during the close stops it half way, and httpcore's pool never takes the request back (its connection slot
held for ever). Measured: 8-14 of 200 streams whose end came at the bound (the streams of
tests/integration/test_drain_pool.py), and 19-42 of 600 judged streams through the router under load, until its
pool ran out (503 `router_overloaded`); with anyio's scope, none. The same holds for every bound around a read that
can reach a body's end: the router's (provider_canary/router/upstream.py) and the probe's
(tasks/probe/attempt.py) use anyio's `fail_after`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx

__all__ = ["DRAIN_CAP_BYTES", "DRAIN_S", "drain"]

#: After [DONE], what the body may still hold is read for at most this long and this many bytes; a body that goes
#: on past either is cut, its connection closed.
DRAIN_S = 0.1
DRAIN_CAP_BYTES = 16 * 1024


async def drain(chunks: AsyncIterator[bytes]) -> None:
    """Read the rest of a body whose [DONE] was read (bounded: `DRAIN_S`, `DRAIN_CAP_BYTES`); errors end it."""
    left = DRAIN_CAP_BYTES
    with anyio.move_on_after(DRAIN_S):
        try:
            async for data in chunks:
                left -= len(data)
                if left < 0:
                    return
        except httpx.HTTPError:
            return
