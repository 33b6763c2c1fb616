"""The probe worker's event loop (tasks/probe/worker.py runs it in a child process, or in a thread of this one): the
calls it takes, the bound on requests in flight, the parking of slow starts, the httpx clients it lends.

- `ProbeCall`: one attempt to make, as plain picklable data (what the caller sends over the socket).
- `LoopRunner`: the bound on requests in flight (`concurrency`) is kept here: the caller sends every call at once with
  its priority, the runner starts the earliest round's first (a round's chains, a tool call's second turn or a
  language confirmation, pass the rounds started after it) and the next one as soon as one ends. While it has work,
  it says how much every `HEARTBEAT_S` (the caller's proof that the worker is alive).
- A request still waiting for its reply's first text `PARK_AFTER_S` after it started is parked: it stops counting
  toward the bound, and counts again once its first text arrives. Its endpoint is then known slow: its other calls
  start at once, parked from their start (tasks/probe/call_queue.py). At most `PARKED_FACTOR` x `concurrency` requests
  run at once, parked or not.
- Requests are spread over several httpx clients (`CLIENT_STREAMS` each): httpcore's pool scans all of its
  connections for every request it starts or ends, which at 256 in flight on one client cost more CPU than the
  requests' own bytes.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from tasks.config import CanaryConfig
from tasks.core.types import Attempt, Endpoint
from tasks.probe.call_queue import ProbeQueue
from tasks.runtime.clock import SystemClock
from tasks.runtime.failpoints import raise_point

#: Seconds between a busy worker's heartbeats (requests running, requests queued).
HEARTBEAT_S = 2.0
#: The id a heartbeat comes with instead of a call's.
HEARTBEAT = -1
#: Requests one httpx client carries at once (module docstring).
CLIENT_STREAMS = 8
#: Seconds after its start a request with no first text yet stops counting toward `concurrency` (module docstring).
PARK_AFTER_S = 2.0
#: Requests running at once, parked or not, at most this many times `concurrency`.
PARKED_FACTOR = 4


@dataclass(frozen=True)
class ProbeCall:
    """One attempt to make: what `tasks.probe.attempt.probe_once_async` needs, as plain picklable data."""

    base_url: str
    endpoint: Endpoint
    contract: str
    round_id: str
    attempt_no: int
    language: str | None
    cfg: CanaryConfig
    api_key: str = field(repr=False)
    #: Every secret the caller's process knows (environment, Secret blocks, URLs' userinfo): the worker's
    #: recorder redacts replies with them, as the caller would (the worker's own environment is older).
    secrets: tuple[str, ...] = field(default=(), repr=False)
    #: The request body, built by the caller from the contract's SPEC (tasks/core/probe_request.py), so that a
    #: contract registered in the caller's process needs nothing here; `language` is then the one it records.
    body: dict[str, Any] | None = field(default=None, repr=False)


class _Clients:
    """httpx.AsyncClients lent per request, each carrying at most CLIENT_STREAMS at once (one TLS context for all:
    loading the CA bundle costs 15-25 ms of CPU). Used from the loop's thread only."""

    def __init__(self) -> None:
        self._ssl = httpx.create_ssl_context()
        self._load: dict[httpx.AsyncClient, int] = {}
        self._spare: list[httpx.AsyncClient] = []

    @contextmanager
    def lend(self) -> Iterator[httpx.AsyncClient]:
        from tasks.probe.sockets import new_async_client

        if not self._spare:
            client = new_async_client(self._ssl, CLIENT_STREAMS)  # its blocks stamped as the loop reads them
            self._load[client] = 0
            self._spare.append(client)
        client = self._spare[-1]
        self._load[client] += 1
        if self._load[client] >= CLIENT_STREAMS:
            self._spare.pop()
        try:
            yield client
        finally:
            if self._load[client] == CLIENT_STREAMS:
                self._spare.append(client)
            self._load[client] -= 1


async def run_call(clients: _Clients, call: ProbeCall, armed: str | None,
                   first_text: Callable[[], None] | None = None) -> Attempt:
    """One attempt on this event loop; `first_text()` when its reply's first text arrived."""
    from tasks.probe.attempt import probe_once_async
    from tasks.runtime.secrets import register

    register(*call.secrets)
    raise_point("probe-raises", call.endpoint.tag, armed, secret_hint=call.api_key)
    with clients.lend() as client:
        return await probe_once_async(
            client, base_url=call.base_url, api_key=call.api_key, endpoint=call.endpoint, contract=call.contract,
            round_id=call.round_id, attempt_no=call.attempt_no, language=call.language, cfg=call.cfg,
            clock=SystemClock(), body=call.body, first_text=first_text)


Deliver = Callable[[int, bool, Any], None]


def _endpoint_key(call: ProbeCall) -> tuple[str, str, str]:
    """The endpoint a call goes to, as the queue tells slow ones apart."""
    return call.base_url, call.endpoint.model, call.endpoint.tag


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed (its I/O costs the worker about half of asyncio's), else asyncio's."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()  # type: ignore[no-any-return]


class LoopRunner:
    """Attempts on one event loop (module docstring): `submit` from any thread; at most the latest call's
    `concurrency` run at once, lowest priority first; each answer goes to `deliver(rid, ok, attempt or error)`, and
    while there is work, `deliver(HEARTBEAT, True, (running, queued))` every `HEARTBEAT_S`."""

    def __init__(self, deliver: Deliver, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop or new_loop()
        self._deliver = deliver
        self._clients: _Clients | None = None
        self._queue = ProbeQueue()  # (rid, call, armed) by priority, and the lane of known slow endpoints
        self._running: set[asyncio.Task[None]] = set()
        self._parked: set[asyncio.Task[None]] = set()  # running, no first text after PARK_AFTER_S: not counted
        self._laned: set[asyncio.Task[None]] = set()  # started from the lane of known slow endpoints
        self._limit = 1
        self._beating = False

    def submit(self, rid: int, priority: Any, call: ProbeCall, armed: str | None) -> None:
        self.loop.call_soon_threadsafe(self._queued, rid, priority, call, armed)

    def _queued(self, rid: int, priority: Any, call: ProbeCall, armed: str | None) -> None:
        self._queue.push(priority, _endpoint_key(call), (rid, call, armed))
        self._limit = max(1, call.cfg.concurrency)
        self._start()
        if not self._beating:
            self._beating = True
            self.loop.call_later(HEARTBEAT_S, self._beat)

    def _start(self) -> None:
        while (found := self._queue.next(len(self._running) - len(self._parked), len(self._running), self._limit,
                                         self._limit * PARKED_FACTOR, len(self._laned))) is not None:
            (rid, call, armed), parked = found
            texted: list[bool] = []  # set once the reply's first text arrived
            key = _endpoint_key(call)
            task = self.loop.create_task(self._run(rid, call, armed, texted, key))
            self._running.add(task)
            task.add_done_callback(self._ended)
            if parked:  # an endpoint known slow (tasks/probe/call_queue.py): parked from its start
                self._parked.add(task)
                self._laned.add(task)
            else:
                self.loop.call_later(PARK_AFTER_S, self._park, task, texted, key)

    def _park(self, task: asyncio.Task[None], texted: list[bool], key: Any) -> None:
        if not task.done() and not texted:
            self._parked.add(task)
            self._queue.parked(key)  # its endpoint's other calls start at once, parked
            self._start()

    def _first_text(self, texted: list[bool], key: Any, started: float) -> None:
        texted.append(True)
        if self.loop.time() - started < PARK_AFTER_S:
            self._queue.answered_fast(key)
        task = asyncio.current_task(self.loop)
        if task is not None:
            self._parked.discard(task)  # it counts again

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._parked.discard(task)
        self._laned.discard(task)
        self._start()

    def _beat(self) -> None:
        self._deliver(HEARTBEAT, True, (len(self._running), len(self._queue)))
        if self._running or self._queue:
            self.loop.call_later(HEARTBEAT_S, self._beat)
        else:
            self._beating = False

    async def _run(self, rid: int, call: ProbeCall, armed: str | None, texted: list[bool], key: Any) -> None:
        if self._clients is None:
            self._clients = _Clients()
        try:
            attempt = await run_call(self._clients, call, armed,
                                     functools.partial(self._first_text, texted, key, self.loop.time()))
        except Exception as exc:  # a bug of ours: the caller records it, the other probes go on
            self._deliver(rid, False, f"{type(exc).__name__}: {exc}")
            return
        self._deliver(rid, True, attempt)

    def run_in_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.loop.run_forever, name="probe-loop", daemon=True)
        thread.start()
        return thread
