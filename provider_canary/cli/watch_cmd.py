"""`canary watch`: the watcher as its own service, for the work-pool path (prefect.yaml; `canary serve` runs the
same loop in its own process).

It looks at every configured model every `suspect_confirm_after_s` / 3 seconds with no flow run per look
(tasks/watch/loop.py); a suspicion becomes a Scheduled run of `canary-cycle/canary-cycle`, which the pool's
worker runs like any cycle run. With `--db` (repeated, one per shard) it follows each shard's file: the models
that file holds, and a confirmation round as a run of that shard's deployment `canary-cycle/canary-cycle-<stem>`
(docs/operations.md 2c) on that file. It needs the Prefect API the worker serves (PREFECT_API_URL). `--once`: one
look, printed, then exit. SIGTERM (a service manager) and Ctrl-C stop it between two looks' steps.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import typer

from provider_canary.cli.serve_cmd import CYCLE_DEPLOYMENT, _api_url, _check_reachable
from tasks.config.loading import load_config
from tasks.errors import ConfigError


def watch_command(config: Path | None, *, once: bool = False, json_out: bool = False,
                  cycle_deployment: str = CYCLE_DEPLOYMENT, dbs: list[str] | None = None) -> None:
    from flows.watch import run_served_watcher, watch_once
    from tasks.runtime.clock import utcnow

    cfg = load_config(config)
    api = _api_url()
    if not api:
        raise ConfigError(
            "watch needs the Prefect API its confirmation rounds run on: export PREFECT_API_URL (the server the "
            "work pool's worker uses, e.g. http://127.0.0.1:4200/api)"
        )
    _check_reachable(api, "watch")
    # as given: the cycle run resolves it where it runs (the worker's CANARY_HOME, prefect.yaml's pull step)
    config_path = str(config) if config else None
    shards = [str(Path(db).expanduser().resolve()) for db in dbs or []]
    if once:
        looks = watch_once(cfg, utcnow(), cycle_deployment, config_path, shards)
        typer.echo(json.dumps(looks, indent=2) if json_out else "\n".join(_line(look) for look in looks))
        return
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if shards:
        from flows.watch import shard_deployment

        typer.echo("canary watch: " + ", ".join(f"{db} (its own models; confirmation rounds as runs of "
                                                f"{shard_deployment(db)})" for db in shards), err=True)
    else:
        typer.echo(f"canary watch: {len(cfg.models)} model(s), confirmation rounds as runs of {cycle_deployment}",
                   err=True)
    run_served_watcher(config_path, cycle_deployment, stop, shards)


def _line(look: dict[str, object]) -> str:
    said = look["error"] or look["waiting"]
    if said:
        return f"{look['model']}: {said}"
    found = look["suspicions"]
    if not isinstance(found, list) or not found:
        return f"{look['model']}: nothing suspected"
    confirmation = look["confirmation"]
    then = f"confirmation {confirmation['confirms']}" if isinstance(confirmation, dict) else f"{look['skipped']}"
    return f"{look['model']}: " + "; ".join(f"{s['tag']} {s['signal']}" + (f":{s['quality']}" if s["quality"] else "")
                                            for s in found) + f" -> {then}"
