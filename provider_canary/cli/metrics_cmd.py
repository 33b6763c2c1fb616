"""`canary metrics`: the Prometheus exposition of the canary's state (tasks/metrics/exporter.py).

    canary metrics --db canary.duckdb                          # http://127.0.0.1:9464/metrics
    canary metrics --db shard-a.duckdb --db shard-b.duckdb     # several shards, one exporter
    canary metrics --db canary.duckdb --once                   # print one scrape and exit

Each scrape reads the analysts' snapshot(s) read-only; the live file is never opened, so a scrape never
blocks a round. `canary serve` runs the same collector in its own process (`--metrics-port`).
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from provider_canary.cli.runs import require_database, resolve_cli_config
from tasks.config.loading import apply_overrides


def metrics_command(*, dbs: list[str], config: Path | None, port: int, addr: str, once: bool) -> None:
    cfg = resolve_cli_config(config, db=dbs[0] if dbs else None)
    paths = dbs or [cfg.db_path]
    for path in paths:
        require_database(apply_overrides(cfg, {"db_path": path}))
    from tasks.metrics.exporter import CanaryCollector, exposition  # seconds: after the quick refusals
    from tasks.metrics.server import serve_metrics

    if once:
        typer.echo(exposition(CanaryCollector(paths, cfg)).decode(), nl=False)
        return
    try:
        serve_metrics(paths, cfg, port, addr)
    except OSError as exc:
        from tasks.errors import ConfigError

        raise ConfigError(f"metrics: cannot listen on {addr}:{port}: {exc.strerror or exc}") from None
    typer.echo(f"Prometheus metrics of {', '.join(str(p) for p in paths)} at http://{addr}:{port}/metrics", err=True)
    while True:  # the server runs in a daemon thread; Ctrl-C ends the command (exit 130)
        time.sleep(3600)
