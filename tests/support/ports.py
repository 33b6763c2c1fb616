"""Loopback ports for the tests' servers: one picked now (`free_port`), or one held until its server starts
(`HeldPort`)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port free now (nothing holds it once this returns)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HeldPort:
    """A loopback port kept bound, so that no other bind to port 0 on this machine gets it, until `release()`, just
    before the process meant to listen on it starts. A port picked minutes before its server starts and let go in
    between can be taken by a server of a test running beside it (a router's /healthz in
    tests/e2e/test_fleet_prometheus.py once answered another server's 404 page). The socket never listens, so its
    release leaves nothing behind (no TIME_WAIT)."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = int(self._socket.getsockname()[1])

    def release(self) -> int:
        """Let the port go (again: nothing); returns it."""
        self._socket.close()
        return self.port
