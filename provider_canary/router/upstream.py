"""One attempt against one tier (I/O): send, then either fail over, pass the answer through, or commit.

`try_stream` drives the pure `provider_canary.router.stream.Gate` with the upstream's bytes until the first content
chunk (commit) or a failure within the first-chunk budget; `relay` forwards the rest after the commit and keeps
the bytes it forwarded (up to a cap) for the judging. `try_once` is the non-streaming attempt; what its answer
is worth is the shell's business (provider_canary/router/answer.py). Neither raises for anything an upstream can do:
failures are returned as `TierFailure` data.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import anyio
import httpx

import provider_canary.router.reasons as reasons
from provider_canary.router import stream as gate_fsm
from provider_canary.router.answer import AnswerReader
from provider_canary.router.reasons import Cause, FailoverReason
from provider_canary.router.stream import Abort, Commit, FailOver, Frame, Gate, Send
from provider_canary.router.tiers import failover_reason
from tasks.core.types import Attempt, ErrorClass
from tasks.probe.drain import drain
from tasks.probe.http_errors import classify_exception

#: Bytes of an upstream error body read before passing it on or failing over.
MAX_ERROR_BODY = 64 * 1024
#: Response headers copied from the upstream to the client.
PASS_HEADERS = ("content-type", "x-generation-id")


@dataclass(frozen=True)
class TierFailure:
    reason: FailoverReason  # connect, timeout, http_429, first_chunk_timeout, native_network_error, ...
    detail: str = ""
    latency_ms: float = 0.0
    retry_after: str | None = None  # the raw Retry-After header, if any
    provider: str | None = None  # the provider a stream's chunks named before it failed


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
    frames: tuple[Frame, ...] = ()  # `first`'s events as the gate read them (`Gate.read_all`)


def _pass_headers(response: httpx.Response) -> dict[str, str]:
    return {k: response.headers[k] for k in PASS_HEADERS if k in response.headers}


#: The failover reason of a request that raised, by the probe's class of its httpx exception
#: (tasks/probe/http_errors.py).
_REQUEST_FAILURE_REASONS: Mapping[ErrorClass, Cause] = {ErrorClass.CONNECT: Cause.CONNECT,
                                                        ErrorClass.TIMEOUT: Cause.TIMEOUT}


def _request_failure(exc: httpx.HTTPError, latency_ms: float) -> TierFailure:
    if isinstance(exc, httpx.PoolTimeout):  # no connection free in the router's own pool: nothing was sent
        return _overloaded(latency_ms, type(exc).__name__)
    cause = _REQUEST_FAILURE_REASONS.get(classify_exception(exc), Cause.TRANSPORT_ERROR)
    return TierFailure(reasons.fixed(cause), type(exc).__name__, latency_ms)


def _overloaded(latency_ms: float, detail: str = "no upstream connection free (router.max_connections)") -> TierFailure:
    return TierFailure(reasons.fixed(Cause.ROUTER_OVERLOADED), detail, latency_ms)


class PoolWatch:
    """httpx's `trace` request extension: httpcore traces nothing while a request waits for a pool connection, so
    the first event says one was taken. A budget that runs out before it is the router's saturation (no request
    was sent), not the tier's slowness. `PoolWatch(request)` puts itself into the request's extensions and takes
    itself out at that first event: httpcore reads the extension afresh for each event, so the dozen that follow
    (headers, body, every read, close) cost nothing."""

    __slots__ = ("connected", "_extensions")

    def __init__(self, request: httpx.Request) -> None:
        self.connected = False
        self._extensions = request.extensions  # the very dict httpcore's Request reads
        self._extensions["trace"] = self

    async def __call__(self, event: str, info: Mapping[str, object]) -> None:
        self.connected = True
        self._extensions.pop("trace", None)


def _error_failure(reason: FailoverReason, body: bytes, latency_ms: float, retry_after: str | None) -> TierFailure:
    """A failover on an HTTP error: its reason carries the error object's code when the body has one."""
    code = error_code_in(body)
    if reason.word is None and code is not None:
        reason = reasons.fixed(reason.cause, code)
    return TierFailure(reason, body[:200].decode("utf-8", "replace"), latency_ms, retry_after)


def error_code_in(body: bytes) -> int | None:
    """The numeric `error.code` of an OpenRouter error document, else None."""
    try:
        doc = json.loads(body[:MAX_ERROR_BODY])
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    error = doc.get("error") if isinstance(doc, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


async def try_once(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    timeout_s: float,
    monotonic: Callable[[], float],
) -> TierFailure | Passthrough:
    started = monotonic()
    request = client.build_request("POST", url, content=body, headers=dict(headers))
    pool = PoolWatch(request)
    try:
        with anyio.fail_after(timeout_s):
            response = await client.send(request)
    except TimeoutError:
        elapsed = (monotonic() - started) * 1000
        if not pool.connected:
            return _overloaded(elapsed)
        return TierFailure(reasons.fixed(Cause.TIMEOUT), f"no answer within {timeout_s:g} s", elapsed)
    except httpx.HTTPError as exc:
        return _request_failure(exc, (monotonic() - started) * 1000)
    latency_ms = (monotonic() - started) * 1000
    reason = failover_reason(response.status_code, response.content)
    if reason is not None:
        return _error_failure(reason, response.content, latency_ms, response.headers.get("retry-after"))
    return Passthrough(response.status_code, response.content, _pass_headers(response), latency_ms)


def _body_parts(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body as it is meant: decoded when the upstream compressed it despite `Accept-Encoding: identity` (a CDN
    gzips JSON error bodies), else the raw bytes (no decoder layer on the hot path)."""
    if response.headers.get("content-encoding", "identity").strip().lower() in ("", "identity"):
        return response.aiter_raw()
    return response.aiter_bytes()


async def _read_capped(response: httpx.Response) -> bytes:
    out = bytearray()
    async for part in _body_parts(response):
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
    fail_over_empty: bool = False,
    read_all: bool = False,
) -> TierFailure | Passthrough | Committed:
    """Open the upstream stream and wait for exactly one content chunk within `budget_s` (from sending).
    `fail_over_empty`: another tier could answer, so an empty `stop` is a failover (provider_canary/router/stream.py).
    `read_all`: the gate reads every event and hands the frames on (the judging folds them)."""
    started = monotonic()
    deadline = started + budget_s

    def elapsed_ms() -> float:
        return (monotonic() - started) * 1000

    # after the commit, the idle budget is httpx's read timeout (no per-chunk timer on the hot path)
    t = client.timeout
    timeout = httpx.Timeout(connect=t.connect, read=idle_timeout_s, write=t.write, pool=t.pool)
    request = client.build_request("POST", url, content=body, headers=dict(headers), timeout=timeout)
    pool = PoolWatch(request)
    try:
        with anyio.fail_after(budget_s):
            response = await client.send(request, stream=True)
    except TimeoutError:
        if not pool.connected:
            return _overloaded(elapsed_ms())
        stalled = reasons.fixed(Cause.FIRST_CHUNK_TIMEOUT)
        return TierFailure(stalled, "no response headers within the budget", elapsed_ms())
    except httpx.HTTPError as exc:
        return _request_failure(exc, elapsed_ms())
    try:
        if response.status_code != 200:
            try:
                with anyio.fail_after(max(deadline - monotonic(), 0.05)):
                    error_body = await _read_capped(response)
            except (TimeoutError, httpx.HTTPError):
                error_body = b""
            reason = failover_reason(response.status_code, error_body)
            if reason is not None:
                return _error_failure(reason, error_body, elapsed_ms(), response.headers.get("retry-after"))
            return Passthrough(response.status_code, error_body, _pass_headers(response), elapsed_ms())
        chunks = _body_parts(response).__aiter__()
        gate = Gate(fail_over_empty=fail_over_empty, read_all=read_all)
        while True:
            try:
                with anyio.fail_after(deadline - monotonic()):
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
                    return TierFailure(action.reason, action.detail, elapsed_ms(), provider=gate.provider)
                if isinstance(action, Commit):
                    sent = [a for a in actions if isinstance(a, Send)]
                    first = action.data + b"".join(a.data for a in sent)
                    frames = action.frames + tuple(f for a in sent for f in a.frames)
                    committed = Committed(response, chunks, gate, first, _pass_headers(response), elapsed_ms(), frames)
                    response = None  # type: ignore[assignment]  # ownership moves to the caller
                    return committed
    finally:
        if response is not None:
            await response.aclose()


@dataclass(frozen=True)
class Relayed:
    """How a relayed stream ended: its gate, why the router aborted it (if it did), what the client got folded
    for the judging (provider_canary/router/answer.py; None when nothing was kept or the stream did not end whole), and
    whether the client took it to the end."""

    gate: Gate
    aborted: FailoverReason | None
    answer: Attempt | None
    completed: bool


def _same(data: bytes) -> bytes:
    return data


async def relay(
    committed: Committed,
    now_s: Callable[[], int],
    on_abort: Callable[[FailoverReason], None],
    on_end: Callable[[Relayed], None],
    keep_bytes: int = 0,
    mask: Callable[[bytes], bytes] = _same,
) -> AsyncIterator[bytes]:
    """Everything after the commit, byte for byte but for `mask` (provider_canary/router/masking.py: the tier keys); an
    upstream failure ends with one error chunk. With `keep_bytes`, the events the gate read (`Gate.read_all`) are folded
    after each piece went out, up to `keep_bytes` of them (provider_canary/router/answer.py `AnswerReader`), for
    `on_end`.

    The idle budget is the request's httpx read timeout (set in `try_stream`).
    """
    gate = committed.gate
    reader = AnswerReader(keep_bytes=keep_bytes) if keep_bytes else None
    aborted: FailoverReason | None = None
    completed = False
    try:
        yield mask(committed.first)
        if reader is not None:
            reader.frames(committed.frames)
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
                    yield mask(action.data)
                    if reader is not None:
                        reader.frames(action.frames)
                elif isinstance(action, Abort):
                    aborted = action.reason
                    on_abort(action.reason)
                    yield action.data
        completed = True
        if gate.done:  # the chunked body's end read: httpcore keeps the connection for the next request
            await drain(committed.chunks)
    finally:
        await committed.response.aclose()
        answer = reader.attempt() if reader is not None and completed and aborted is None else None
        on_end(Relayed(gate, aborted, answer, completed))
