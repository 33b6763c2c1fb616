"""Probe requests run on one event loop in a worker process, so the bytes are timestamped where they arrive
(issues 12 and 32).

The round process is busy: judging replies, detecting languages, other models' rounds. A thread of that process reading
a socket must take the GIL back before it can timestamp the bytes it received, and a thread per request does not scale
either: at 128-256 requests in flight the threads' turns alone (a plain threaded httpx client, benchmarks/ttft_floor.py)
put hundreds of milliseconds on a provider's TTFT. A canary that reports slowness it causes itself suspends healthy
providers. So the requests run in one child process (`python -m tasks.probe.worker <fd>`) that does nothing else: one
asyncio event loop (uvloop when installed) carrying every request in flight (`tasks.probe.attempt.probe_once_async`:
HTTP, the SSE parser, the clock), each block of a body stamped as the loop reads it from the socket, before any parsing
(tasks/probe/sockets.py). The round process sends it one `ProbeCall` per attempt over a socket pair and gets the
`Attempt` back.

- The event loop's side (tasks/probe/loop.py `LoopRunner`) keeps the bound on requests in flight (`concurrency`):
  the caller sends every call at once with its priority, and the loop starts the next one as soon as one ends,
  without waiting for the busy caller to take an answer and send more; it parks slow starts (`PARK_AFTER_S`) and
  spreads the requests over several httpx clients.
- One worker per process, started on first use (`start`) and again if it died; it exits when its parent goes
  (end of file on the socket), so nothing is left behind, even after SIGKILL. It runs with
  `MALLOC_ARENA_MAX` capped (tasks/runtime/arenas.py).
- A bug of ours inside the worker comes back as `ProbeWorkerError` with its message; a worker that dies, or says
  nothing (no answer, no heartbeat every `HEARTBEAT_S`) for `ANSWER_GRACE_S` while calls are out, fails its calls
  the same way (a silent one is killed): the caller records them, the other endpoints keep their results.
- `CANARY_PROBE_PROCESS=0` runs the same event loop in a thread of this process instead (debugging,
  profiling).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from tasks.core.types import Attempt
from tasks.probe.loop import HEARTBEAT, Deliver, LoopRunner, ProbeCall
from tasks.runtime.arenas import capped_env
from tasks.runtime.failpoints import ENV as FAILPOINTS_ENV

ENV = "CANARY_PROBE_PROCESS"
ROOT = Path(__file__).resolve().parents[1]
#: Seconds the caller waits for any word of a worker that has calls out (an answer or a heartbeat) before it
#: gives those calls up and kills the worker.
ANSWER_GRACE_S = 30.0


class ProbeWorkerError(RuntimeError):
    """The worker could not produce an attempt (a bug of ours in the probe, or the worker died)."""


# --- the caller's side ----------------------------------------------------------------------------------------


class _Transport:
    """Where calls go: a worker process (`_Worker`) or a loop in a thread of this process (`_InThread`)."""

    alive = True

    def send(self, rid: int, priority: Any, call: ProbeCall, armed: str | None) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """End it now (a worker that went silent)."""

    def is_running(self) -> bool:
        raise NotImplementedError


class _Worker(_Transport):
    """The parent's end of the worker process: sends calls; a reader thread hands the answers to `landed`."""

    def __init__(self, landed: Deliver, orphaned: Callable[[_Transport, str], None]) -> None:
        parent, child = socket.socketpair()
        env = capped_env({**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tasks.probe.worker", str(child.fileno())],
            pass_fds=(child.fileno(),), env=env, stdin=subprocess.DEVNULL,
        )
        child.close()
        self.conn = Connection(parent.detach())
        self.lock = threading.Lock()
        self._landed, self._orphaned = landed, orphaned
        threading.Thread(target=self._read, name="probe-worker-reader", daemon=True).start()

    def send(self, rid: int, priority: Any, call: ProbeCall, armed: str | None) -> None:
        with self.lock:  # a Connection is not thread-safe: one sender at a time
            if not self.alive:
                raise ProbeWorkerError("the probe worker process is gone")
            try:
                self.conn.send((rid, priority, call, armed))
            except OSError as exc:
                self.alive = False
                raise ProbeWorkerError(f"the probe worker process is gone ({exc})") from None

    def _read(self) -> None:
        try:
            while True:
                rid, ok, value = self.conn.recv()
                self._landed(rid, ok, value)
        except (EOFError, OSError):
            pass
        self.alive = False
        code: int | None
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = self.proc.poll()
        self._orphaned(self, f"the probe worker process died (exit {code})")

    def is_running(self) -> bool:
        return self.alive and self.proc.poll() is None

    def stop(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.proc.kill()


class _InThread(_Transport):
    def __init__(self, landed: Deliver) -> None:
        self.runner = LoopRunner(landed)
        self.runner.run_in_thread()

    def send(self, rid: int, priority: Any, call: ProbeCall, armed: str | None) -> None:
        self.runner.submit(rid, priority, call, armed)

    def is_running(self) -> bool:
        return True


class Dispatcher:
    """This process's one transport to the worker, and the futures of the calls out (module docstring).

    `submit(call, priority)` sends a call at once and returns its future; the worker bounds and orders them.
    Answers resolve the futures in the transport's thread: a caller's callback runs there."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._order = itertools.count()
        self._out: dict[int, tuple[Future[Attempt], _Transport]] = {}
        self._heard = time.monotonic()  # the transport's latest word (an answer or a heartbeat)
        self._counts = (0, 0)  # (running, queued) in the latest heartbeat
        self._transport: _Transport | None = None
        self._watch: threading.Thread | None = None

    def transport(self) -> _Transport:
        """The running transport, started (again) when there is none alive (or the mode changed)."""
        with self._lock:
            return self._ensure_transport()

    def _ensure_transport(self) -> _Transport:
        want_thread = in_process()
        t = self._transport
        if t is None or not t.is_running() or isinstance(t, _InThread) != want_thread:
            t = _InThread(self._landed) if want_thread else _Worker(self._landed, self._orphaned)
            self._transport = t
            self._heard = time.monotonic()
        return t

    def submit(self, call: ProbeCall, priority: Any = 0) -> Future[Attempt]:
        future: Future[Attempt] = Future()
        with self._lock:
            rid = next(self._order)
            try:
                transport = self._ensure_transport()
                if not self._out:
                    self._heard = time.monotonic()
                self._out[rid] = (future, transport)
                transport.send(rid, priority, call, os.environ.get(FAILPOINTS_ENV))
            except Exception as exc:  # the worker is gone: this call fails, the next one starts a new one
                self._out.pop(rid, None)
                future.set_exception(exc if isinstance(exc, ProbeWorkerError) else ProbeWorkerError(
                    f"the probe worker could not be started: {type(exc).__name__}: {exc}"))
                return future
            self._start_watch()
        return future

    def in_flight(self) -> tuple[int, int]:
        """(requests running in the worker, calls queued there), as its latest heartbeat said."""
        with self._lock:
            return self._counts if self._out else (0, 0)

    def _landed(self, rid: int, ok: bool, value: Any) -> None:
        with self._lock:
            self._heard = time.monotonic()
            if rid == HEARTBEAT:
                self._counts = value
                return
            out = self._out.pop(rid, None)
        if out is not None:
            out[0].set_result(value) if ok else out[0].set_exception(ProbeWorkerError(value))

    def _orphaned(self, transport: _Transport, why: str) -> None:
        """A transport died (or went silent): its calls fail; the next call starts a new one."""
        with self._lock:
            gone = [rid for rid, (_, t) in self._out.items() if t is transport]
            futures = [self._out.pop(rid)[0] for rid in gone]
        for future in futures:
            future.set_exception(ProbeWorkerError(why))

    def _start_watch(self) -> None:
        if self._watch is None or not self._watch.is_alive():
            self._watch = threading.Thread(target=self._silence, name="probe-silence", daemon=True)
            self._watch.start()

    def _silence(self) -> None:
        """While calls are out, a transport that says nothing for ANSWER_GRACE_S is given up (module docstring)."""
        while True:
            time.sleep(1.0)
            with self._lock:
                if not self._out:
                    self._watch = None
                    return
                silent = time.monotonic() - self._heard > ANSWER_GRACE_S
                transport = self._transport
            if silent and transport is not None:
                transport.stop()
                self._orphaned(transport, "no answer from the probe worker process in time")


_DISPATCHER = Dispatcher()


def dispatcher() -> Dispatcher:
    return _DISPATCHER


def worker() -> _Worker:
    """This process's worker process, started (again) if there is none alive (CANARY_PROBE_PROCESS=1)."""
    transport = _DISPATCHER.transport()
    if not isinstance(transport, _Worker):
        raise ProbeWorkerError("the probes run in this process (CANARY_PROBE_PROCESS=0)")
    return transport


def is_running() -> bool:
    """True when this process's transport (the worker, or the loop's thread) is up."""
    t = _DISPATCHER._transport
    return t is not None and t.is_running()


def in_process() -> bool:
    return os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no", "off")


def start() -> None:
    """Start the worker now (a cycle's warm-up), so the first probe does not pay for its start."""
    _DISPATCHER.transport()


@contextmanager
def attempt_runner() -> Iterator[Callable[[ProbeCall], Attempt]]:
    """A function making one attempt and waiting for it (the dispatcher's bound applies)."""

    def run(call: ProbeCall) -> Attempt:
        return _DISPATCHER.submit(call).result()

    yield run


# --- the worker process ---------------------------------------------------------------------------------------


def _serve(fd: int) -> None:
    """The child: a reader thread takes calls off the socket, the event loop (this thread) runs them, a sender
    thread sends each attempt back; exit with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; EOF ends this process
    conn = Connection(fd)
    answers: queue.SimpleQueue[tuple[int, bool, Any]] = queue.SimpleQueue()

    def send() -> None:
        while True:
            answer = answers.get()
            try:
                conn.send(answer)
            except OSError:
                os._exit(0)

    runner = LoopRunner(lambda rid, ok, value: answers.put((rid, ok, value)))

    def read() -> None:
        while True:
            try:
                rid, priority, call, armed = conn.recv()
            except (EOFError, OSError):
                os._exit(0)
            runner.submit(rid, priority, call, armed)

    threading.Thread(target=send, name="probe-answers", daemon=True).start()
    threading.Thread(target=read, name="probe-calls", daemon=True).start()
    runner.loop.run_forever()


if __name__ == "__main__":
    from tasks.runtime.secrets import install_redaction

    install_redaction()
    _serve(int(sys.argv[1]))
