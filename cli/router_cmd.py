"""`canary router --port N --routes FILE`: the OpenAI-compatible router in front of the providers.

A bad routes file (or a tier whose key variable is unset) is one line on stderr and exit code 2
(CANARY_DEBUG=1 adds the traceback). examples/routes-simulator.toml works against `canary simulator`.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Annotated

import typer

from cli.debug import traceback_if_debug
from tasks.errors import RoutesError

DEFAULT_ROUTES = Path("examples/routes.toml")


def router_command(
    port: Annotated[int, typer.Option("--port", help="port to listen on")] = 8788,
    routes: Annotated[Path, typer.Option("--routes", help="routes TOML (router/ROUTES.md)")] = DEFAULT_ROUTES,
    host: Annotated[str, typer.Option("--host", help="interface to bind")] = "127.0.0.1",
    log_level: Annotated[str, typer.Option("--log-level", help="debug | info | warning | error")] = "info",
) -> None:
    """Run the OpenAI-compatible router with first-chunk commit failover."""
    from router.routes_loading import load_routes
    from router.savings import SAVERS

    try:
        loaded = load_routes(routes, frozenset(SAVERS))
        from router.server import serve

        with socket.socket() as probe:  # a busy port is one line too, not uvicorn's shutdown log
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))

        logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
        if logging.getLogger().level > logging.DEBUG:  # httpx says every upstream request at INFO: debug only
            logging.getLogger("httpx").setLevel(logging.WARNING)
        serve(loaded, host=host, port=port, log_level=log_level)
    except RoutesError as exc:
        traceback_if_debug()
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:  # port in use, permission denied
        traceback_if_debug()
        typer.echo(f"canary: router cannot listen on {host}:{port} ({exc.strerror or exc})", err=True)
        raise typer.Exit(2) from None


if __name__ == "__main__":  # pragma: no cover
    typer.run(router_command)
