"""The private Prefect server's process (tasks/prefect_api/private_server.py starts it): serve Prefect's API app
on a socket the owner bound, die with the owner, and take the whole process group along.

    python -m tasks.prefect_api.server_child --fd=N --port=P --pipe=R --owner=PID

Only the standard library is imported before the watchdog is forked, so that it is small and holds no thread.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys

_PR_SET_PDEATHSIG = 1
#: `deferred`: leave Prefect's transactions as Prefect begins them (`serialize_sqlite_transactions`).
SQLITE_BEGIN_ENV = "CANARY_PRIVATE_SQLITE_BEGIN"


def die_with_owner(owner: int) -> None:
    """SIGKILL this process when its parent dies; exit now if the parent already died."""
    prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)  # Linux only; elsewhere: the watchdog
    if prctl is not None and prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        os._exit(3)
    if os.getppid() != owner:
        os._exit(3)


def kill_group_when_owner_goes(pipe_r: int) -> None:
    """Block until the owner's end of the pipe closes (it stopped us or died), then SIGKILL the group."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stop() reaches the server; the group goes after
    try:
        while os.read(pipe_r, 4096):
            pass
    finally:
        os.killpg(0, signal.SIGKILL)
        os._exit(0)


def serialize_sqlite_transactions() -> None:
    """Every transaction of the private server's SQLite database starts with `BEGIN IMMEDIATE`.

    Prefect begins most of its transactions DEFERRED: one that reads (the flow of a new flow run, the parent of a
    new task run) and then inserts cannot take the write lock once another connection wrote since its read, and
    SQLite fails it at once with "database is locked", whatever the busy timeout. Prefect answers 503, and its
    client retries with growing waits: 200 runs, 64 at a time: 482 requests answered 503 and 2 runs failed for good
    after ~60 s of retries (127.5 s against 23.4 s: benchmarks/bench_private_api.py). An
    IMMEDIATE transaction takes the write lock first and waits its turn (the busy timeout, DATABASE_TIMEOUT_S),
    so no run creation fails; the private server carries one command's calls, so serialized reads cost nothing
    that shows. Only the private server: the operator's own server, and Postgres, are theirs to tune. A Prefect
    whose database layer has moved on is served as it is (the 503s come back, nothing breaks), and so is one
    started with `CANARY_PRIVATE_SQLITE_BEGIN=deferred` (Prefect's own behaviour, the benchmark's baseline)."""
    if os.environ.get(SQLITE_BEGIN_ENV, "").strip().lower() == "deferred":
        return
    try:
        from contextlib import asynccontextmanager

        from prefect.server.database import configurations
        original = configurations.AioSqliteConfiguration.begin_transaction
    except (ImportError, AttributeError):  # pragma: no cover - another Prefect layout: serve it unchanged
        return

    @asynccontextmanager
    async def begin_transaction(self, session, with_for_update=False):  # type: ignore[no-untyped-def]
        async with original(self, session, with_for_update=True) as transaction:
            yield transaction

    configurations.AioSqliteConfiguration.begin_transaction = begin_transaction  # type: ignore[method-assign]


def serve_child(argv: list[str]) -> None:
    """Die with the owner, fork the watchdog, then serve Prefect's API on fd N until SIGTERM."""
    opts = dict(a.removeprefix("--").split("=", 1) for a in argv)
    die_with_owner(int(opts["owner"]))
    pipe_r = int(opts["pipe"])
    if os.fork() == 0:
        kill_group_when_owner_goes(pipe_r)
    os.close(pipe_r)
    serialize_sqlite_transactions()
    import uvicorn

    sock = socket.socket(fileno=int(opts["fd"]))
    config = uvicorn.Config(
        "prefect.server.api.server:create_app", factory=True, lifespan="on", log_level="error"
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    serve_child(sys.argv[1:])
