"""`canary simulator`: run the OpenRouter-compatible simulator in the foreground until Ctrl-C."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer

from tasks.errors import FleetError


def simulator_command(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 = any free port).")] = 8787,
    fleet: Annotated[
        Path | None,
        typer.Option(help="Fleet TOML file (format: provider_canary/simulator/FLEET.md); default: the built-in fleet."),
    ] = None,
    time_scale: Annotated[
        float, typer.Option(help="Multiplies every simulated delay (0.1 = ten times faster).", min=0.0)
    ] = 1.0,
) -> None:
    """Run the OpenRouter-compatible simulator (catalog, chat completions, fleet faults) until Ctrl-C."""
    from provider_canary.simulator.server import start_simulator

    try:
        handle = start_simulator(fleet, port=port, time_scale=time_scale)
    except FleetError as exc:
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"canary: simulator: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    with handle:
        models = ", ".join(m.id for m in handle.fleet.models)
        typer.echo(f"OPENROUTER_BASE_URL={handle.base_url}")
        typer.echo(f"OPENROUTER_API_KEY={handle.api_key}")
        typer.echo(f"serving {models} from {handle.fleet.source}; Ctrl-C to stop")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            typer.echo("simulator stopped", err=True)
