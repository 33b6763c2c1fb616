"""`canary run`: one round per model now, each a Prefect flow run, after a preflight that turns a bad config,
a missing key, an unknown model or an unreachable base URL into one clear line (exit 2) instead of a failed
flow run with a traceback.

The flow runs go to the configured Prefect API (PREFECT_API_URL, its /health checked after the preflight) or to
one private server that `tasks.prefect_api.server.prefect_api()` starts right after the config checks, so that its
start-up overlaps the preflight's network calls and the flow's imports, and that dies with this process even
under SIGKILL.

Its exit code says whether the cycle did its job: 0 when every round completed (or was deferred: a busy
database, its probes spooled to land next time); 1 when any round did not (failed, its database unreadable or
unwritable, its journal or spool unwritable, skipped because another round of its model held the slot) or the
cycle could not start (the previous cycle held the database's lock or slot too long); one line per such round
on stderr. 2 stays a `CanaryError` before the cycle starts (bad config, missing key, unreachable URL); a listing
that times out or answers 408/429/5xx at the pre-flight is an outage, not a config error: the round runs, records
it failed with the upstream's status, and the run exits 1."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import typer

from tasks.config import CanaryConfig, public_base_url
from tasks.config.loading import resolve_config
from tasks.config.preflight import preflight as preflight_paths
from tasks.core.plan import is_model_id
from tasks.core.types import RoundState
from tasks.errors import ConfigError
from tasks.runtime.secrets import read_secret, redact_known_secrets

if TYPE_CHECKING:
    from tasks.prefect_api.server import PrefectApi


def resolve_cli_config(config: Path | None, *, db: str | None = None, base_url: str | None = None,
                       mode: str | None = None) -> CanaryConfig:
    """A command's config: `--config`, then `--db`, `--base-url` and (`canary run`) `--mode` (tasks/config/loading.py
    `resolve_config`, the one place a config is assembled)."""
    return resolve_config(config, db_path=db, base_url=base_url, mode=mode)


def require_database(cfg: CanaryConfig) -> None:
    """Admin and read commands work on an existing database only: a mistyped --db or CANARY_DB must not
    quietly create an empty one (and then publish its empty ignore list)."""
    path = Path(cfg.db_path).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"no database at {path.resolve()}: create one with `canary run` (or `canary demo`, which leaves"
            " demo.duckdb), or point --db / CANARY_DB at an existing file"
        )


def preflight(cfg: CanaryConfig, models: list[str]) -> dict[str, str]:
    """Fail fast, in one line, before a flow run starts, on what the operator must fix (an unknown model, a
    rejected key, a base URL that does not answer). A listing that times out or answers 408/429/5xx is an
    outage, not a config error: its model's round runs and records it (failed, with the upstream's status;
    exit 1). Returns model -> the outage seen at pre-flight."""
    from concurrent.futures import ThreadPoolExecutor

    from tasks.probe.discover import DiscoveryUnreachable, fetch_endpoints

    key = read_secret("OPENROUTER_API_KEY", required=True)
    assert key is not None

    def listed(client: httpx.Client, model: str) -> bool | str:
        try:
            return bool(fetch_endpoints(client, cfg.base_url, key.get(), model))
        except DiscoveryUnreachable as exc:
            if exc.outage:
                return str(exc)
            raise

    with httpx.Client(timeout=httpx.Timeout(cfg.read_timeout_s, connect=cfg.connect_timeout_s)) as client:
        with ThreadPoolExecutor(max_workers=min(16, max(1, len(models)))) as pool:  # a catalog: not one by one
            found = list(pool.map(lambda m: listed(client, m), models))
    for model, ok in zip(models, found, strict=True):
        if ok is False:
            raise ConfigError(f"config: model {model!r} has no endpoints at {public_base_url(cfg)}")
    return {m: ok for m, ok in zip(models, found, strict=True) if isinstance(ok, str)}


#: `canary run`'s exit code when the cycle ran but did not do its whole job (README "Exit codes").
CYCLE_INCOMPLETE_EXIT = 1


def run_once(
    *, config: Path | None, model: str | None, base_url: str | None, mode: str | None, db: str | None
) -> int:
    """One cycle; returns the exit code (0, or CYCLE_INCOMPLETE_EXIT)."""
    cfg = resolve_cli_config(config, db=db, base_url=base_url, mode=mode)
    if model is not None and not is_model_id(model):
        raise ConfigError(f"--model must look like 'author/slug', without spaces or control characters (got {model!r})")
    models = [model] if model else list(cfg.models)
    preflight_paths(cfg)
    from tasks.prefect_api.configured import configured_api_url
    from tasks.prefect_api.server import prefect_api

    if configured_api_url() is None:  # a private server is fresh: it has no Secret blocks to look in
        read_secret("OPENROUTER_API_KEY", required=True, use_blocks=False)
    with prefect_api() as api:  # a private server starts now, in parallel with the next two lines
        for m, outage in preflight(cfg, models).items():
            typer.echo(redact_known_secrets(f"{m}: {outage} at pre-flight: an outage, not a config error: its round "
                                            "runs and records it"))
        import flows.cycle  # noqa: F401  (the flows' imports, also while the server starts)

        wait_for_api(api)
        return run_rounds(cfg, models, config=config, mode=mode)


def wait_for_api(api: PrefectApi) -> None:
    """Wait for the run's Prefect API, saying so when it is a private server still starting (10-30 s of silence
    otherwise: issue 30). Progress goes to stdout, as the rounds' lines do; stderr stays for problems."""
    server = api.server
    if server is None or server.is_ready:
        api.wait_ready()
        return
    started = server.started_at or time.monotonic()
    typer.echo("starting a private Prefect server for this run (3-5 s; the first on a machine 10-30 s; export "
               "PREFECT_API_URL of a running `prefect server start` to skip it)...")
    api.wait_ready(progress=lambda s: typer.echo(f"  still starting the Prefect server ({s:.0f} s)..."))
    typer.echo(f"Prefect server ready after {time.monotonic() - started:.0f} s; running the cycle")


def cycle_problems(cycle: dict[str, object]) -> list[str]:
    """One line per part of a cycle that did not do its job (empty: exit 0)."""
    if cycle.get("status") != "complete":
        return [f"cycle not run: {cycle.get('reason') or cycle.get('status')}"]
    problems = []
    for summary in cycle.get("rounds") or []:  # type: ignore[attr-defined]
        status = summary.get("status")
        if status == RoundState.FAILED:
            problems.append(f"{summary['model']}: round failed: {summary.get('error')}")
        elif status == RoundState.SKIPPED:
            problems.append(f"{summary['model']}: round skipped: {summary.get('reason')}")
        elif status not in (RoundState.COMPLETE, RoundState.DEFERRED):
            problems.append(f"{summary['model']}: round {status}")
    return problems


def run_rounds(cfg: CanaryConfig, models: list[str], *, config: Path | None, mode: str | None) -> int:
    """One cycle (every model concurrently), against the Prefect API `run_once` provides."""
    from flows.cycle import canary_cycle
    from tasks.prefect_api.server import is_private_api, settings_for_flow_runs

    # Heartbeats only for an existing server: its zombie-run automation marks a killed run Crashed when they stop
    # (tasks/orchestration/zombie_runs.py); a private server dies with this process (and the cycle's heartbeat thread
    # costs it up to 1 s at its end; its rounds share one thread: tasks/prefect_api/subflow_runs.py).
    with settings_for_flow_runs(heartbeats=not is_private_api()):
        cycle = canary_cycle(
            models=models,
            mode=mode,
            config_path=str(config) if config else None,
            base_url=public_base_url(cfg),  # never the userinfo: the flow restores it (tasks.config)
            db_path=cfg.db_path,
        )
    for summary in cycle["rounds"]:
        if summary.get("status") == RoundState.FAILED:
            typer.echo(f"{summary['model']}: round failed: {summary.get('error')}")
        elif summary.get("skipped"):
            typer.echo(f"{summary['round_id']}: skipped ({summary.get('reason')}); ignore {summary['ignore']}")
        else:
            typer.echo(
                f"{summary['round_id']}: {summary['status']}, {summary['endpoints']} endpoints, "
                f"{summary['attempts']} attempts, decisions {summary['decisions'] or 'none'}, "
                f"ignore {summary['ignore']}"
            )
        if summary.get("confirmation") and not summary["confirmation"].get("flow_run_id"):
            due = summary["confirmation"]["due"]
            typer.echo(f"  hard failures to confirm at {due} (a served canary schedules this; by hand: canary run "
                       f"--model {summary['model']} after that time)")
    if cycle.get("wall_s") is not None:
        typer.echo(f"cycle: {len(cycle['rounds'])} model(s) in {cycle['wall_s']:.1f} s")
    problems = cycle_problems(cycle)
    for line in problems:
        typer.echo(redact_known_secrets(f"canary: {line}"), err=True)
    return CYCLE_INCOMPLETE_EXIT if problems else 0
