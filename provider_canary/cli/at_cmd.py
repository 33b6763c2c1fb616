"""`canary at --model M --time T [--window 2h] [--json]`: answer a user's report from the DuckDB history.

Reads the database read-only (a short read window on the live file) and prints `tasks.at.report_from_connection`
(which takes any store connection, so notebooks pass the analysts' snapshot).
Bad --time/--window, a missing database or an unknown model: one line on stderr, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tasks.at import Report, format_report, parse_time, parse_window, report_from_connection
from tasks.errors import CanaryError

__all__ = ["at_command"]


def _report(model: str, time: str, window: str, config: Path | None, db: str | None) -> Report:
    from provider_canary.cli.runs import require_database, resolve_cli_config
    from tasks import store
    from tasks.core.exclusions import load_builtin

    t, w = parse_time(time), parse_window(window)
    cfg = resolve_cli_config(config, db=db)
    require_database(cfg)
    builtin = load_builtin(cfg.exclusions_file)
    with store.open_store(cfg.db_path, read_only=True) as con:
        return report_from_connection(con, model, t, w, builtin)


def at_command(
    *, model: str, time: str, window: str, config: Path | None, json_out: bool, db: str | None
) -> None:
    try:
        report = _report(model, time, window, config, db)
    except CanaryError as exc:  # one line, exit 2, also when the app runs without cli.main (tests, embedding)
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from None
    if json_out:
        typer.echo(json.dumps(report.as_json(), indent=2))
    else:
        typer.echo(format_report(report))
