"""One attempt against one tier (I/O): send, then either fail over, pass the answer through, or commit.

`try_stream` drives the pure `router.stream.Gate` with the upstream's bytes until the first content chunk
(commit) or a failure within the first-chunk budget; `relay` forwards the rest after the commit.
`try_once` is the non-streaming attempt. Neither raises for anything an upstream can do: failures are
returned as `TierFailure` data.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import httpx

from router import stream as gate_fsm
from router.stream import Abort, Commit, FailOver, Gate, Send
from router.tiers import failover_reason
from tasks.core.http_rules import is_try_again_status
from tasks.core.types import ErrorClass
from tasks.http_errors import classify_exception

#: Bytes of an upstream error body read before passing it on or failing over.
MAX_ERROR_BODY = 64 * 1024
#: Response headers copied from the upstream to the client.
PASS_HEADERS = ("content-type", "x-generation-id")


@dataclass(frozen=True)
class TierFailure:
    reason: str  # connect, timeout, http_429, first_chunk_timeout, stream_error_before_commit, ...
    detail: str = ""
    latency_ms: float = 0.0
    retry_after: str | None = None  # the raw Retry-After header, if any


@dataclass(frozen=True)
class Passthrough:
    """A whole upstream answer for the client: a non-streaming 200, or an error that is the request's."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    latency_ms: float = 0.0


@dataclass
class Committed:
    response: httpx.Response
    chunks: AsyncIterator[bytes]
    gate: Gate
    first: bytes
    headers: dict[str, str]
    latency_ms: float


def _pass_headers(response: httpx.Response) -> dict[str, str]:
    return {k: response.headers[k] for k in PASS_HEADERS if k in response.headers}


#: The failover reason of a request that raised, by the probe's class of its httpx exception (tasks/http_errors.py).
_REQUEST_FAILURE_REASONS: Mapping[ErrorClass, str] = {ErrorClass.CONNECT: "connect", ErrorClass.TIMEOUT: "timeout"}


def _request_failure(exc: httpx.HTTPError, latency_ms: float) -> TierFailure:
    reason = _REQUEST_FAILURE_REASONS.get(classify_exception(exc), "transport_error")
    return TierFailure(reason, type(exc).__name__, latency_ms)


def error_in_body(body: bytes) -> int | None:
    """The `error.code` of an OpenRouter error document (also sent inside an HTTP 200), else None."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    error = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(error, dict):
        return None
    code = error.get("code")
    return code if isinstance(code, int) else 500


async def try_once(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    timeout_s: float,
    monotonic: Callable[[], float],
) -> TierFailure | Passthrough:
    started = monotonic()
    try:
        async with asyncio.timeout(timeout_s):
            response = await client.post(url, content=body, headers=dict(headers))
    except TimeoutError:
        return TierFailure("timeout", f"no answer within {timeout_s:g} s", (monotonic() - started) * 1000)
    except httpx.HTTPError as exc:
        return _request_failure(exc, (monotonic() - started) * 1000)
    latency_ms = (monotonic() - started) * 1000
    reason = failover_reason(response.status_code, response.content)
    if reason is not None:
        return TierFailure(
            reason,
            response.text[:200],
            latency_ms,
            response.headers.get("retry-after"),
        )
    if response.status_code == 200:
        code = error_in_body(response.content)
        if is_try_again_status(code):
            return TierFailure(f"error_in_200_{code}", response.text[:200], latency_ms)
    return Passthrough(response.status_code, response.content, _pass_headers(response), latency_ms)


async def _read_capped(response: httpx.Response) -> bytes:
    out = bytearray()
    async for part in response.aiter_raw():
        out += part
        if len(out) >= MAX_ERROR_BODY:
            break
    return bytes(out[:MAX_ERROR_BODY])


async def try_stream(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    budget_s: float,
    monotonic: Callable[[], float],
    idle_timeout_s: float = 30.0,
) -> TierFailure | Passthrough | Committed:
    """Open the upstream stream and wait for exactly one content chunk within `budget_s` (from sending)."""
    started = monotonic()
    deadline = started + budget_s

    def elapsed_ms() -> float:
        return (monotonic() - started) * 1000

    # after the commit, the idle budget is httpx's read timeout (no per-chunk timer on the hot path)
    t = client.timeout
    timeout = httpx.Timeout(connect=t.connect, read=idle_timeout_s, write=t.write, pool=t.pool)
    request = client.build_request("POST", url, content=body, headers=dict(headers), timeout=timeout)
    try:
        async with asyncio.timeout(budget_s):
            response = await client.send(request, stream=True)
    except TimeoutError:
        return TierFailure("first_chunk_timeout", "no response headers within the budget", elapsed_ms())
    except httpx.HTTPError as exc:
        return _request_failure(exc, elapsed_ms())
    try:
        if response.status_code != 200:
            try:
                async with asyncio.timeout(max(deadline - monotonic(), 0.05)):
                    error_body = await _read_capped(response)
            except (TimeoutError, httpx.HTTPError):
                error_body = b""
            reason = failover_reason(response.status_code, error_body)
            if reason is not None:
                return TierFailure(
                    reason,
                    error_body[:200].decode("utf-8", "replace"),
                    elapsed_ms(),
                    response.headers.get("retry-after"),
                )
            return Passthrough(response.status_code, error_body, _pass_headers(response), elapsed_ms())
        chunks = response.aiter_raw().__aiter__()
        gate = Gate()
        while True:
            try:
                async with asyncio.timeout(deadline - monotonic()):
                    data = await chunks.__anext__()
            except TimeoutError:
                gate, actions = gate_fsm.timed_out(gate)
            except StopAsyncIteration:
                gate, actions = gate_fsm.eof(gate)
            except httpx.HTTPError as exc:
                gate, actions = gate_fsm.broken(gate, type(exc).__name__)
            else:
                gate, actions = gate_fsm.feed(gate, data)
            for action in actions:
                if isinstance(action, FailOver):
                    return TierFailure(action.reason, action.detail, elapsed_ms())
                if isinstance(action, Commit):
                    first = action.data + b"".join(a.data for a in actions if isinstance(a, Send))
                    committed = Committed(
                        response, chunks, gate, first, _pass_headers(response), elapsed_ms()
                    )
                    response = None  # type: ignore[assignment]  # ownership moves to the caller
                    return committed
    finally:
        if response is not None:
            await response.aclose()


async def relay(
    committed: Committed,
    now_s: Callable[[], int],
    on_abort: Callable[[str], None],
    on_end: Callable[[int | None], None] | None = None,
    on_close: Callable[[Gate], None] | None = None,
) -> AsyncIterator[bytes]:
    """Everything after the commit, byte for byte; an upstream failure ends with one error chunk.

    The idle budget is the request's httpx read timeout (set in `try_stream`).
    """
    gate = committed.gate
    try:
        yield committed.first
        if gate.phase is not gate_fsm.Phase.COMMITTED:
            return  # the first read already carried [DONE]
        while gate.phase is gate_fsm.Phase.COMMITTED:
            try:
                data = await committed.chunks.__anext__()
            except StopAsyncIteration:
                gate, actions = gate_fsm.eof(gate, now_s())
            except httpx.HTTPError as exc:
                if classify_exception(exc) is ErrorClass.TIMEOUT:  # silence past the idle budget
                    gate, actions = gate_fsm.timed_out(gate, now_s())
                else:
                    gate, actions = gate_fsm.broken(gate, type(exc).__name__, now_s())
            else:
                gate, actions = gate_fsm.feed(gate, data)
            for action in actions:
                if isinstance(action, Send):
                    yield action.data
                elif isinstance(action, Abort):
                    on_abort(action.reason)
                    yield action.data
    finally:
        await committed.response.aclose()
        if on_end is not None:
            on_end(gate.prompt_tokens)
        if on_close is not None:
            on_close(gate)
