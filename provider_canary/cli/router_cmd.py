"""`canary router --port N --routes FILE`: the OpenAI-compatible router in front of the providers.

A bad routes file (or a tier whose key variable is unset) is one line on stderr and exit code 2
(CANARY_DEBUG=1 adds the traceback). So is a `--host` beyond loopback for a routes file without any `[[client]]`
(unless `[router] allow_anonymous = true`). examples/routes-simulator.toml works against `canary simulator`.

`canary router keys add NAME [--routes F] [--rpm N]` prints a new client key, once, and the `[[client]]` block
holding its SHA-256 to paste into the routes file (the key itself is stored nowhere).
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Annotated

import typer

from provider_canary.cli.debug import traceback_if_debug
from tasks.errors import RoutesError

DEFAULT_ROUTES = Path("examples/routes.toml")


def router_command(
    port: Annotated[int, typer.Option("--port", help="port to listen on")] = 8788,
    routes: Annotated[Path, typer.Option(
        "--routes", help="routes TOML (provider_canary/router/ROUTES.md)")] = DEFAULT_ROUTES,
    host: Annotated[str, typer.Option("--host", help="interface to bind")] = "127.0.0.1",
    log_level: Annotated[str, typer.Option("--log-level", help="debug | info | warning | error")] = "info",
) -> None:
    """Run the OpenAI-compatible router with first-chunk commit failover."""
    from provider_canary.router.clients import anonymous_refusal
    from provider_canary.router.routes_loading import load_routes
    from provider_canary.router.savings import SAVERS

    try:
        loaded = load_routes(routes, frozenset(SAVERS))
        refusal = anonymous_refusal(loaded, host)
        if refusal is not None:
            raise RoutesError(refusal)
        from provider_canary.router.server import serve

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


def keys_add_command(
    name: Annotated[str, typer.Argument(help="the client's name (metrics, route events and logs show it)")],
    routes: Annotated[Path | None, typer.Option("--routes", help="check the name against this routes file")] = None,
    rpm: Annotated[int, typer.Option("--rpm", help="requests_per_minute (0: no limit)")] = 0,
) -> None:
    """Print a new client key (once: only its SHA-256 is kept) and the client block to paste."""
    import secrets

    from provider_canary.router.clients import PLACEHOLDER_SHA256, client_block, new_key
    from provider_canary.router.routes_loading import load_routes, parse_client

    replaces = False
    try:
        parse_client({"name": name, "key_sha256": PLACEHOLDER_SHA256, "requests_per_minute": rpm}, 0)
        if routes is not None:  # the name and limit as the file will check them, and not taken there
            from provider_canary.router.savings import SAVERS

            callers = load_routes(routes, frozenset(SAVERS)).callers
            if any(c.name == name and c.key_sha256 != PLACEHOLDER_SHA256 for c in callers):
                raise RoutesError(f"routes: {routes} already has a client named {name!r}")
            replaces = any(c.name == name for c in callers)
    except RoutesError as exc:
        traceback_if_debug()
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from None
    key = new_key(secrets.token_urlsafe(32))
    where = f"{routes}" if routes is not None else "the routes file"
    typer.echo(f"key (shown once; give it to {name}, it is stored nowhere): {key}\n", err=True)
    if routes is not None and replaces:
        typer.echo(f"# in {where}, replace the placeholder block of {name} with this one, and restart the router:",
                   err=True)
    else:
        typer.echo(f"# add to {where} and restart the router:", err=True)
    typer.echo(client_block(name, key, rpm), nl=False)


if __name__ == "__main__":  # pragma: no cover
    typer.run(router_command)
