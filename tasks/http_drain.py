"""Reading the rest of a streamed body after its [DONE], so httpcore keeps the connection (the probe and the router).

httpcore returns a connection to its pool only when the response was read to its end; a stream left after its
[DONE] event (normally with only the chunked body's last chunk still unread, often in the same block) is closed
instead, and the next request opens a new connection: a TCP and TLS handshake each against OpenRouter. `drain`
reads that rest, for at most `DRAIN_S` and `DRAIN_CAP_BYTES`: a body that goes on after [DONE] is cut as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx

#: After [DONE], what the body may still hold is read for at most this long and this many bytes; a body that goes
#: on past either is cut, its connection closed.
DRAIN_S = 0.1
DRAIN_CAP_BYTES = 16 * 1024


async def drain(chunks: AsyncIterator[bytes]) -> None:
    """Read the rest of a body whose [DONE] was read (bounded: `DRAIN_S`, `DRAIN_CAP_BYTES`); errors end it."""
    left = DRAIN_CAP_BYTES
    with contextlib.suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout(DRAIN_S):
            async for data in chunks:
                left -= len(data)
                if left < 0:
                    return
