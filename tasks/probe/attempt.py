"""One pinned, streamed probe request → one `Attempt` (docs/design.md "Contracts"; openrouter-api.md 2-4, 7).

Two shells, one request and one reading of the body (tasks/probe/body.py): `probe_once_async` on an
httpx.AsyncClient, what the probe worker's event loop runs (tasks/probe/worker.py: hundreds of requests in flight
in one thread, each block stamped when it is read), and `probe_once` on an httpx.Client in the calling thread.

Neither raises for a provider fault: whatever the wire does (refuses, stalls, cuts, sends garbage,
errors mid-stream) becomes data on the attempt (`error_class`, `error_code`, `error_detail`), and a partial
stream keeps its partial text. The contracts judge the attempt later; this module only measures.

Time budgets (cfg): ``connect_timeout_s`` for the connection, ``read_timeout_s`` for silence between bytes
(keep-alive comments reset it), ``probe_budget_s`` for the whole attempt (keep-alives do not extend it). The
budget is enforced after the headers (by a timeout of the event loop, or in a thread by a watchdog that shuts
the socket down at the deadline), so even a silent stall ends on time; before the headers, the connect and read
timeouts (each capped by the budget) bound the wait. TTFT keeps being measured past ``cfg.ttft_s``: the judge,
not the probe, applies thresholds.

httpx exceptions are mapped at one boundary, `tasks.probe.http_errors.classify_exception` (most specific class first,
httpx style); what counts as transport is decided in tasks/core/classify.py, not here. Retry-After is read by
`tasks.core.http_rules.parse_retry_after`, as the router and the Slack client read it.

An HTTP error's detail keeps the error object's message and the relayed cause (`metadata.provider_name` and
`metadata.raw`, bounded: tasks/core/wire/chunks.py `chunk_error`); a redirect's keeps its Location (never followed).

A 200 that is not what was asked is recorded as `protocol_violation` (tasks/core/classify.py makes it a `fail`):
a body whose content-type is neither an event stream nor JSON (an HTML page: its first bytes are read, up to
`SNIFF_CAP_BYTES`, never the rest), a JSON body that is not a JSON object (or is over its cap, or is not
UTF-8), and on a stream a frame that does not decode or a line over the parser's cap (reading stops there,
so a 20 MB line costs about 1 MiB). A missing content-type is read as an event stream: a body with no SSE in
it before the first chunk is caught by the parser (`not_sse`).
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from tasks.config import CanaryConfig
from tasks.core.probe_request import build_request, prompt_language
from tasks.core.types import Attempt, Endpoint, ErrorClass
from tasks.probe.body import ERROR_BODY_CAP_BYTES, SNIFF_CAP_BYTES, BodyReader
from tasks.probe.drain import drain
from tasks.probe.http_errors import classify_exception
from tasks.probe.recorder import AttemptRecorder
from tasks.probe.sockets import arrival_of, sent_of
from tasks.runtime.clock import Clock

__all__ = ["ERROR_BODY_CAP_BYTES", "SNIFF_CAP_BYTES", "probe_once", "probe_once_async"]

#: Attribution headers (openrouter-api.md 7). With a non-public referer OpenRouter needs the title too.
ATTRIBUTION_REFERER = "https://github.com/provider-canary"
ATTRIBUTION_TITLE = "provider-canary"

class _Deadlines:
    """One thread per process that fires watchdogs at their deadlines (monotonic seconds).

    A `threading.Timer` per attempt started and ended a thread each time: ~0.9 ms of the probe worker's CPU per
    attempt, a fifth of it (measured against the history fleet at 16 in flight). A disarmed watchdog stays in
    the heap until its deadline and then does nothing."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Empty, with no thread yet (also a forked child's: it has no deadline thread, maybe a held lock)."""
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Watchdog]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, seconds: float, watchdog: _Watchdog) -> None:
        when = time.monotonic() + max(seconds, 0.0)
        with self._cond:
            earliest = self._heap[0][0] if self._heap else math.inf
            heapq.heappush(self._heap, (when, next(self._order), watchdog))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="probe-deadlines", daemon=True)
                self._thread.start()
            elif when < earliest:  # the thread sleeps until the earliest deadline: wake it for an earlier one
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        watchdog = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(self._heap[0][0] - now if self._heap else None)
            watchdog.fire()


_DEADLINES = _Deadlines()
os.register_at_fork(after_in_child=_DEADLINES.reset)


class _Watchdog:
    """Shuts the response's socket down at the deadline, so a silent stall cannot outlive the budget.

    Uses httpcore's documented ``network_stream`` response extension. Without it (e.g. a mock transport) the
    budget is still checked after every received block.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.fired = False

    def arm(self, response: httpx.Response, seconds: float) -> None:
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        self._sock = sock
        _DEADLINES.add(seconds, self)

    def fire(self) -> None:
        with self._lock:
            if self._sock is None:
                return
            self.fired = True
            try:
                # The plain-socket method: on an SSLSocket it leaves the SSL object to the reading thread.
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def disarm(self) -> None:
        with self._lock:
            self._sock = None


@dataclass(frozen=True)
class _Request:
    """One probe's request and what its attempt records, the same for both shells."""

    url: str
    body: dict[str, Any]
    headers: dict[str, str]
    timeout: httpx.Timeout
    budget: float
    language: str


def _request(base_url: str, api_key: str, endpoint: Endpoint, contract: str, attempt_no: int,
             language: str | None, cfg: CanaryConfig, body: dict[str, Any] | None) -> _Request:
    recorded = language if body is not None and language is not None else prompt_language(contract, language)
    if body is None:
        body = build_request(contract, endpoint.model, endpoint.tag, language, cfg, attempt_no=attempt_no)
    headers = {
        "Authorization": f"Bearer {api_key}",
        "Accept": "text/event-stream",
        "HTTP-Referer": ATTRIBUTION_REFERER,
        "X-OpenRouter-Title": ATTRIBUTION_TITLE,
    }
    budget = cfg.probe_budget_s
    timeout = httpx.Timeout(
        connect=min(cfg.connect_timeout_s, budget),
        read=min(cfg.read_timeout_s, budget),
        write=min(cfg.read_timeout_s, budget),
        pool=min(cfg.connect_timeout_s, budget),
    )
    return _Request(base_url.rstrip("/") + "/chat/completions", body, headers, timeout, budget, recorded)


def _failed(rec: AttemptRecorder, exc: Exception, budget: float, budget_cut: bool) -> None:
    """An exception out of the request: the budget when it was cut there, an httpx error's class, else a bug
    (raised)."""
    if budget_cut:  # the read was cut at the budget: whatever surfaced, it is the budget
        rec.fail(ErrorClass.TIMEOUT, detail=f"probe budget of {budget:g}s exceeded")
    elif isinstance(exc, httpx.HTTPError):
        rec.fail(classify_exception(exc), detail=f"{type(exc).__name__}: {exc}")
    else:
        raise exc


def probe_once(
    client: httpx.Client,
    *,
    base_url: str,
    api_key: str,
    endpoint: Endpoint,
    contract: str,
    round_id: str,
    attempt_no: int,
    language: str | None,
    cfg: CanaryConfig,
    clock: Clock,
    body: dict[str, Any] | None = None,
) -> Attempt:
    """Send one pinned probe to `endpoint` and record everything the wire showed (a thread's client).

    `body` is the request the caller built (tasks/core/probe_request.py), `language` then the prompt's; without
    it the request is built here from the registry."""
    req = _request(base_url, api_key, endpoint, contract, attempt_no, language, cfg, body)
    started_at = clock.now()
    t0 = clock.monotonic()
    deadline = t0 + req.budget
    rec = AttemptRecorder(cap_bytes=cfg.text_cap_bytes, t0=t0, secret=api_key)
    watchdog = _Watchdog()
    try:
        with client.stream("POST", req.url, json=req.body, headers=req.headers, timeout=req.timeout) as response:
            rec.http_status = response.status_code
            watchdog.arm(response, deadline - clock.monotonic())
            try:
                reader = BodyReader(response.status_code, response.reason_phrase, response.headers, rec, deadline,
                                    clock.now())
                try:
                    for data in response.iter_bytes():
                        if reader.feed(data, clock.monotonic()):
                            break
                except httpx.HTTPError:
                    if not reader.keeps_status_on_read_error:
                        raise
                    reader.abandon()
                reader.end(clock.monotonic(), budget_cut=watchdog.fired)
            finally:
                watchdog.disarm()
    except Exception as exc:
        _failed(rec, exc, req.budget, watchdog.fired)
    return rec.to_attempt(round_id=round_id, endpoint=endpoint, contract=contract, attempt_no=attempt_no,
                          started_at=started_at, language=req.language, end=clock.monotonic())


async def probe_once_async(
    client: httpx.AsyncClient,
    *,
    base_url: str,
    api_key: str,
    endpoint: Endpoint,
    contract: str,
    round_id: str,
    attempt_no: int,
    language: str | None,
    cfg: CanaryConfig,
    clock: Clock,
    body: dict[str, Any] | None = None,
    first_text: Callable[[], None] | None = None,
) -> Attempt:
    """`probe_once` on an event loop (the probe worker's): the same request, the same body reading
    (tasks/probe/body.py), each block stamped when the loop read it from the socket and TTFT counted from when the
    request was written to it (a client of tasks/probe/sockets.py; with another client, when the task runs). The budget
    is a timeout of the loop from the headers on (the thread's shell shuts the socket down at the deadline instead).
    `first_text()` is called once, when the reply's first text arrived (the worker's parking, tasks/probe/worker.py)."""
    req = _request(base_url, api_key, endpoint, contract, attempt_no, language, cfg, body)
    started_at = clock.now()
    t0 = clock.monotonic()
    deadline = t0 + req.budget
    rec = AttemptRecorder(cap_bytes=cfg.text_cap_bytes, t0=t0, secret=api_key)
    budget_cut = False
    try:
        async with client.stream("POST", req.url, json=req.body, headers=req.headers,
                                 timeout=req.timeout) as response:
            rec.http_status = response.status_code
            rec.ttft_from = sent_of(response) or t0  # the provider's time starts when the request went out
            reader = BodyReader(response.status_code, response.reason_phrase, response.headers, rec, deadline,
                                clock.now())
            chunks = response.aiter_bytes()
            try:
                with anyio.fail_after(max(0.0, deadline - clock.monotonic())):  # not asyncio's: tasks/probe/drain.py
                    async for data in chunks:
                        stop = reader.feed(data, arrival_of(response) or clock.monotonic())
                        if first_text is not None and rec.ttft_ms is not None:
                            first_text()
                            first_text = None
                        if stop:
                            break
            except TimeoutError:
                budget_cut = True
                if not reader.keeps_status_on_read_error:
                    raise
                reader.abandon()
            except httpx.HTTPError:
                if not reader.keeps_status_on_read_error:
                    raise
                reader.abandon()
            end = clock.monotonic()
            reader.end(end, budget_cut=budget_cut)
            if rec.done and not budget_cut:
                await drain(chunks)  # the connection back to the pool (tasks/probe/drain.py)
    except Exception as exc:
        _failed(rec, exc, req.budget, budget_cut)
        end = None
    return rec.to_attempt(round_id=round_id, endpoint=endpoint, contract=contract, attempt_no=attempt_no,
                          started_at=started_at, language=req.language, end=end or clock.monotonic())
