"""An ASGI app served by uvicorn in a daemon thread: started, waited for until it accepts connections, stopped.

The one start-and-wait loop of the servers run in-process: the router (provider_canary/router/server.py `start_router`:
tests, the benchmark, the demo) and the simulator (provider_canary/simulator/server.py `start_simulator`).
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import uvicorn

#: Seconds a server gets to accept connections before `start_in_thread` gives up.
STARTUP_TIMEOUT_S = 10.0
#: Seconds `stop` waits for the server's thread.
STOP_TIMEOUT_S = 10.0


@dataclass
class ServerThread:
    server: uvicorn.Server
    thread: threading.Thread
    port: int  # the port it listens on (the bound one when asked for port 0)

    def stop(self) -> None:
        """Ask the server to exit and wait for its thread (idempotent)."""
        self.server.should_exit = True
        self.thread.join(timeout=STOP_TIMEOUT_S)


def start_in_thread(
    config: uvicorn.Config,
    *,
    name: str,
    sockets: list[socket.socket] | None = None,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    failure: str | None = None,
) -> ServerThread:
    """Run `config`'s app in a daemon thread called `name` (on `sockets` if given, else config's host and
    port) and return once it accepts connections; RuntimeError(`failure`) if it dies or takes too long."""
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(failure or f"{name} did not start")
        time.sleep(0.01)
    port = int(server.servers[0].sockets[0].getsockname()[1])
    return ServerThread(server, thread, port)
