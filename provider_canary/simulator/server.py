"""Run the simulator: uvicorn on 127.0.0.1 in a background thread, behind a small handle.

with start_simulator(time_scale=0.01) as sim:
    httpx.post(sim.base_url + "/chat/completions", headers={"Authorization": f"Bearer {sim.api_key}"}, ...)
    sim.set_fleet(load_fleet("other.toml"))
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn

from provider_canary.simulator.app import SimulatorState, build_app
from provider_canary.simulator.fleet import Fleet
from provider_canary.simulator.fleet_file import DEFAULT_FLEET_PATH, load_fleet
from provider_canary.simulator.player import CutConnection
from tasks.runtime.uvicorn_thread import ServerThread, start_in_thread


class _QuietCuts(logging.Filter):
    """Drop uvicorn's report of the connection cuts the simulator makes on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while exc is not None:
            if isinstance(exc, CutConnection):
                return False
            exc = exc.__cause__ or exc.__context__ or _first_of_group(exc)
        return "returned without completing response" not in record.getMessage()


def _first_of_group(exc: BaseException) -> BaseException | None:
    inner = getattr(exc, "exceptions", None)
    return inner[0] if inner else None


def quiet_uvicorn_logs() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietCuts) for f in logger.filters):
        logger.addFilter(_QuietCuts())


def resolve_now(now: Any) -> Callable[[], datetime] | None:
    """Accept a callable returning an aware datetime, or a Clock-like object with .now()."""
    if now is None:
        return None
    if hasattr(now, "now") and callable(now.now):
        return now.now  # type: ignore[no-any-return]
    if callable(now):
        return now  # type: ignore[no-any-return]
    raise TypeError("now must be a callable returning a datetime, or an object with a now() method")


def resolve_fleet(fleet: Fleet | str | Path | None) -> Fleet:
    if fleet is None:
        return load_fleet(DEFAULT_FLEET_PATH)
    if isinstance(fleet, Fleet):
        return fleet
    return load_fleet(fleet)


class SimulatorHandle:
    """A running simulator. Context manager; `.stop()` shuts it down cleanly (idempotent)."""

    def __init__(self, running: ServerThread, state: SimulatorState) -> None:
        self._running, self._state = running, state
        self.port = running.port
        self.base_url = f"http://127.0.0.1:{self.port}/api/v1"
        self.api_key = state.api_key

    @property
    def fleet(self) -> Fleet:
        return self._state.fleet

    def set_fleet(self, fleet: Fleet | str | Path) -> None:
        """Swap behaviours at runtime (thread-safe); fault counters restart from zero."""
        self._state.set_fleet(resolve_fleet(fleet))

    def fault_requests(self, model: str, tag: str, fault: int = 0) -> int:
        """Requests for `model` served by `tag` while its `fault`-th fault was active (since `set_fleet`)."""
        return self._state.counters.count((model, tag, fault))

    def stop(self) -> None:
        self._state.stopping.set()
        self._running.stop()

    def __enter__(self) -> SimulatorHandle:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"SimulatorHandle(base_url={self.base_url!r})"


def start_simulator(
    fleet: Fleet | str | Path | None = None,
    *,
    port: int = 0,
    api_key: str = "sk-or-v1-simulator",
    time_scale: float = 1.0,
    now: Any = None,
) -> SimulatorHandle:
    """Start the simulator on 127.0.0.1:`port` (0 = any free port) and return once it accepts connections.

    fleet: a Fleet, a path to a fleet TOML file, or None for provider_canary/simulator/fleets/default.toml.
    time_scale: multiplies every simulated delay (0.01 turns a 12 s slow start into 0.12 s).
    now: the simulator's clock for fault windows and ids (callable or Clock); default real UTC time.
    """
    if time_scale < 0:
        raise ValueError("time_scale must be >= 0")
    state = SimulatorState(resolve_fleet(fleet), api_key, time_scale, resolve_now(now))
    quiet_uvicorn_logs()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    config = uvicorn.Config(
        build_app(state),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
        timeout_keep_alive=5,
    )
    running = start_in_thread(config, name="simulator", sockets=[sock], failure="simulator did not start")
    return SimulatorHandle(running, state)
