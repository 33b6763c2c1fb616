"""`canary router` and `canary router keys add` (provider_canary/cli/main.py registers them): thin shells over
provider_canary/cli/router_cmd.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

router_app = typer.Typer(help="Run the OpenAI-compatible router with first-chunk commit failover.",
                         invoke_without_command=True)
router_keys_app = typer.Typer(help="The router's client keys (client blocks of the routes file).", no_args_is_help=True)
router_app.add_typer(router_keys_app, name="keys")


@router_app.callback()
def router(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="port to listen on")] = 8788,
    routes: Annotated[Path, typer.Option("--routes", help="routes TOML")] = Path("examples/routes.toml"),
    host: Annotated[str, typer.Option("--host", help="interface to bind (beyond loopback: needs a client key)")] = (
        "127.0.0.1"),
) -> None:
    """Run the OpenAI-compatible router with first-chunk commit failover."""
    if ctx.invoked_subcommand is not None:
        return
    from provider_canary.cli.router_cmd import router_command

    router_command(port=port, routes=routes, host=host)


@router_keys_app.command("add")
def router_keys_add(
    name: Annotated[str, typer.Argument(help="the client's name (metrics, route events and logs show it)")],
    routes: Annotated[Path | None, typer.Option("--routes", help="check the name against this routes file")] = None,
    rpm: Annotated[int, typer.Option("--rpm", help="requests_per_minute (0: no limit)")] = 0,
) -> None:
    """Print a new client key (once, on stderr) and the client block to paste (on stdout)."""
    from provider_canary.cli.router_cmd import keys_add_command

    keys_add_command(name=name, routes=routes, rpm=rpm)
