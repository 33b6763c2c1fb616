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


def serve_child(argv: list[str]) -> None:
    """Die with the owner, fork the watchdog, then serve Prefect's API on fd N until SIGTERM."""
    opts = dict(a.removeprefix("--").split("=", 1) for a in argv)
    die_with_owner(int(opts["owner"]))
    pipe_r = int(opts["pipe"])
    if os.fork() == 0:
        kill_group_when_owner_goes(pipe_r)
    os.close(pipe_r)
    import uvicorn

    sock = socket.socket(fileno=int(opts["fd"]))
    config = uvicorn.Config(
        "prefect.server.api.server:create_app", factory=True, lifespan="on", log_level="error"
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    serve_child(sys.argv[1:])
