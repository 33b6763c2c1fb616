"""Probe requests run in a worker process, so the bytes are timestamped where they arrive (issue 12).

The round process is busy: Prefect's task machinery, judging replies, detecting languages, other models'
rounds. A thread of that process reading a socket must take the GIL back before it can timestamp the bytes it
received, and with a whole catalog in flight that wait reached hundreds of milliseconds, measured as the
provider's TTFT. A canary that reports slowness it causes itself suspends healthy providers. So the requests
run in one child process (`python -m tasks.probe_worker <fd>`) that does nothing else: HTTP, the SSE parser
and the clock. The round process sends it one `ProbeCall` per attempt over a socket pair and gets the
`Attempt` back; the bound on requests in flight (`concurrency`) stays with the caller.

- One worker per process, started on first use (warm-up starts it) and again if it died; it exits when its
  parent goes (end of file on the socket), so nothing is left behind, even after SIGKILL.
- A bug of ours inside the worker comes back as `ProbeWorkerError` with its message, and a worker that dies
  fails its calls in flight the same way: the caller records them, the other endpoints keep their results.
- `CANARY_PROBE_PROCESS=0` runs the probes in the calling thread instead (debugging, profiling).
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

from tasks.clock import SystemClock
from tasks.config import CanaryConfig
from tasks.core.types import Attempt, Endpoint
from tasks.failpoints import ENV as FAILPOINTS_ENV
from tasks.failpoints import raise_point

ENV = "CANARY_PROBE_PROCESS"
ROOT = Path(__file__).resolve().parents[1]
#: Seconds past the probe budget the caller waits for the worker's answer before giving the attempt up.
ANSWER_GRACE_S = 30.0
#: Threads of the worker: created on demand, so in practice the caller's bound on requests in flight.
WORKER_THREADS = 512


class ProbeWorkerError(RuntimeError):
    """The worker could not produce an attempt (a bug of ours in the probe, or the worker died)."""


@dataclass(frozen=True)
class ProbeCall:
    """One attempt to make: what `tasks.probe.probe_once` needs, as plain picklable data."""

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


Runner = Callable[[ProbeCall], Attempt]


def run_call(client: httpx.Client, call: ProbeCall, armed: str | None = None) -> Attempt:
    from tasks.probe import probe_once
    from tasks.secrets import register

    register(*call.secrets)
    raise_point("probe-raises", call.endpoint.tag, armed, secret_hint=call.api_key)
    return probe_once(client, base_url=call.base_url, api_key=call.api_key, endpoint=call.endpoint,
                      contract=call.contract, round_id=call.round_id, attempt_no=call.attempt_no,
                      language=call.language, cfg=call.cfg, clock=SystemClock(), body=call.body)


def new_client() -> httpx.Client:
    """One client per process: one TLS context (loading the CA bundle costs 15-25 ms of CPU), one pool."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    return httpx.Client(verify=httpx.create_ssl_context(), limits=limits)


class _Worker:
    """The parent's end: sends calls, a reader thread resolves their futures."""

    def __init__(self) -> None:
        parent, child = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                                            if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tasks.probe_worker", str(child.fileno())],
            pass_fds=(child.fileno(),), env=env, stdin=subprocess.DEVNULL,
        )
        child.close()
        self.conn = Connection(parent.detach())
        self.lock = threading.Lock()
        self.pending: dict[int, Future[Attempt]] = {}
        self.ids = itertools.count()
        self.alive = True
        threading.Thread(target=self._read, name="probe-worker-reader", daemon=True).start()

    def submit(self, call: ProbeCall) -> Future[Attempt]:
        future: Future[Attempt] = Future()
        with self.lock:  # a Connection is not thread-safe: one sender at a time
            if not self.alive:
                raise ProbeWorkerError("the probe worker process is gone")
            rid = next(self.ids)
            self.pending[rid] = future
            _SENT.note()
            try:
                self.conn.send((rid, call, os.environ.get(FAILPOINTS_ENV)))
            except OSError as exc:
                self.pending.pop(rid, None)
                self.alive = False
                raise ProbeWorkerError(f"the probe worker process is gone ({exc})") from None
        return future

    def _read(self) -> None:
        try:
            while True:
                rid, ok, value = self.conn.recv()
                with self.lock:
                    future = self.pending.pop(rid, None)
                if future is not None:
                    future.set_result(value) if ok else future.set_exception(ProbeWorkerError(value))
        except (EOFError, OSError):
            pass
        with self.lock:
            self.alive = False
            orphans, self.pending = self.pending, {}
        code = self.proc.poll()
        for future in orphans.values():
            future.set_exception(ProbeWorkerError(f"the probe worker process died (exit {code})"))


class _SendTimes:
    """When this process sent its first and its latest call (monotonic s): see `quiet_after_first_call`."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = 0.0

    def note(self) -> None:
        self.last = time.monotonic()
        if self.first is None:
            self.first = self.last


_LOCK = threading.Lock()
_WORKER: _Worker | None = None
_SENT = _SendTimes()


def quiet_after_first_call(quiet_s: float) -> bool:
    """True once this process has sent calls and then none for `quiet_s`: the probes are in flight and the
    process is waiting for their answers (a time for CPU work that must not delay a request's start)."""
    return _SENT.first is not None and time.monotonic() - _SENT.last >= quiet_s


def worker() -> _Worker:
    """This process's worker, started (again) if there is none alive."""
    global _WORKER
    with _LOCK:
        if _WORKER is None or not _WORKER.alive or _WORKER.proc.poll() is not None:
            _WORKER = _Worker()
        return _WORKER


def is_running() -> bool:
    """True when the probes run in this thread (nothing to start) or this process's worker is alive."""
    if in_process():
        return True
    with _LOCK:
        return _WORKER is not None and _WORKER.alive and _WORKER.proc.poll() is None


def in_process() -> bool:
    return os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no", "off")


def start() -> None:
    """Start the worker now (the round's warm-up), so the first probe does not pay for its start."""
    if not in_process():
        worker()


@contextmanager
def attempt_runner() -> Iterator[Runner]:
    """A function making one attempt: in the worker process, or (CANARY_PROBE_PROCESS=0) in this thread."""
    if in_process():
        with new_client() as client:
            yield lambda call: run_call(client, call, os.environ.get(FAILPOINTS_ENV))
        return

    def run(call: ProbeCall) -> Attempt:
        future = worker().submit(call)
        try:
            return future.result(timeout=call.cfg.probe_budget_s + call.cfg.connect_timeout_s + ANSWER_GRACE_S)
        except TimeoutError:
            raise ProbeWorkerError("no answer from the probe worker process in time") from None

    yield run


def _serve(fd: int) -> None:
    """The child: read calls, run each in a thread, send each attempt back; exit with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; EOF ends this process
    conn = Connection(fd)
    send_lock = threading.Lock()
    client = new_client()
    pool = ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="probe")

    def run(rid: int, call: ProbeCall, armed: str | None) -> None:
        answer: tuple[int, bool, Any]
        try:
            answer = (rid, True, run_call(client, call, armed))
        except Exception as exc:  # a bug of ours: the caller records it, the other probes go on
            answer = (rid, False, f"{type(exc).__name__}: {exc}")
        with send_lock:
            try:
                conn.send(answer)
            except OSError:
                os._exit(0)

    while True:
        try:
            rid, call, armed = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        pool.submit(run, rid, call, armed)


if __name__ == "__main__":
    from tasks.secrets import install_redaction

    install_redaction()
    _serve(int(sys.argv[1]))
