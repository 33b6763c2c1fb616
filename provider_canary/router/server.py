"""Running the router: in the foreground (the CLI) or in a background thread on a loopback port (tests,
the benchmark, the demo): `with start_router(routes) as running: running.base_url`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from provider_canary.router.app import create_app
from provider_canary.router.route_events import Batcher
from provider_canary.router.routes import Routes
from provider_canary.router.shell import RouterShell, build_shell
from tasks.core.types import RouteEvent
from tasks.runtime.clock import Clock
from tasks.runtime.uvicorn_thread import start_in_thread


@dataclass
class RunningRouter:
    base_url: str  # e.g. http://127.0.0.1:54321/v1
    shell: RouterShell


def serve(routes: Routes, *, host: str = "127.0.0.1", port: int = 8788, log_level: str = "info") -> None:
    """Serve until interrupted (raises RoutesError before binding if a tier's key variable is missing)."""
    shell = build_shell(routes)
    uvicorn.run(create_app(shell), host=host, port=port, log_level=log_level, access_log=False)


@contextmanager
def start_router(
    routes: Routes,
    *,
    env: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    events: list[Batcher[RouteEvent]] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    startup_timeout_s: float = 10.0,
) -> Iterator[RunningRouter]:
    shell = build_shell(routes, env=env, clock=clock, events=events)
    config = uvicorn.Config(
        create_app(shell), host=host, port=port, log_level="warning", access_log=False, lifespan="on"
    )
    running = start_in_thread(
        config, name="router", startup_timeout_s=startup_timeout_s, failure="the router did not start"
    )
    try:
        yield RunningRouter(base_url=f"http://{host}:{running.port}/v1", shell=shell)
    finally:
        running.stop()
