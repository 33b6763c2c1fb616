"""`canary serve`: the `canary-cycle` deployment (one schedule: every configured model's round per tick,
concurrently, in one process; a crashed run runs again: tasks/orchestration/deployments.py) and the `canary-deadman`
deployment, served from one process, and in the same process the watcher (live traffic and OpenRouter's uptime
as suspicions: a loop in a thread, flows/watch.py; no flow run per look, its confirmation rounds are runs of
`canary-cycle`). It deploys flows and is no flow itself, so it lives with the commands.

At every start it also applies the dead-man automation (provider_canary/cli/deadman_cmd.py,
tasks/orchestration/deadman_automation.py): Prefect's server posts to Slack when no `canary-cycle` run completed for two
intervals, with this process gone or not. Schedules count from a fixed anchor (tasks/orchestration/deployments.py), so a
restart keeps the rounds' clock times.

At start, before the schedules take over, one cycle runs at once when the database has no complete full round of
a configured model or its newest one is older than an interval (tasks/core/startup.py); otherwise the first cycle
comes with the schedule, one interval after the start.

prefect.yaml holds the same deployments for `prefect deploy` (a work pool + worker; the watcher then runs as
`canary watch`, provider_canary/cli/watch_cmd.py). Serving needs a real Prefect API (`prefect server start`,
PREFECT_API_URL): a temporary server never fires schedules. `CANARY_SERVE_INTERVAL_S` overrides the round interval in
seconds (tests, a quick look at a new setup).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tasks.config import CanaryConfig
from tasks.config.loading import load_config
from tasks.errors import ConfigError

INTERVAL_ENV = "CANARY_SERVE_INTERVAL_S"
#: `canary serve`'s exit code once a signal stopped it (a clean stop: the units' SuccessExitStatus).
INTERRUPTED_EXIT = 130
#: The cycle deployment's full name: the watcher schedules suspicion confirmation rounds as its runs.
CYCLE_DEPLOYMENT = "canary-cycle/canary-cycle"


def interval_override(env: Mapping[str, str] | None = None) -> timedelta | None:
    """`CANARY_SERVE_INTERVAL_S` as a timedelta (None when unset); a bad value is a ConfigError."""
    raw = (os.environ if env is None else env).get(INTERVAL_ENV, "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 1:
        raise ConfigError(f"config: {INTERVAL_ENV} must be a number of seconds >= 1 (got {raw!r})")
    return timedelta(seconds=seconds)


def build_deployment(cfg: CanaryConfig, config_path: str | None, *, interval: timedelta | None = None) -> Any:
    """One schedule, one cycle per tick: the models run concurrently in the serving process, sharing one
    language detector and one request pool, so the process does not grow with the catalog's schedules."""
    from flows.cycle import canary_cycle
    from tasks.orchestration.deployments import CYCLE_CONCURRENCY, concurrency, crash_trigger, every

    period = interval or timedelta(minutes=cfg.interval_min)
    return canary_cycle.to_deployment(
        name="canary-cycle",
        schedules=[every(period, {"config_path": config_path}, slug="cycle")],  # same phase at every redeploy
        parameters={"config_path": config_path},
        triggers=[crash_trigger("canary-cycle")],  # a crashed cycle runs again at once, at most once a window
        concurrency_limit=concurrency(*CYCLE_CONCURRENCY),
        description="Every configured model's round: probe every endpoint pinned, judge, quarantine, publish.",
        tags=["canary"],
    )


def startup_cycle_due(cfg: CanaryConfig, interval: timedelta, now: datetime) -> str | None:
    """Why a cycle runs as soon as serving starts (tasks/core/startup.py), None when the schedule's first cycle
    is soon enough; read from the database (read only) when there is one. A database that cannot be read now
    runs one too: its cycle says what is wrong, loudly, instead of 30 silent minutes."""
    from tasks import store
    from tasks.core.startup import startup_cycle_reason
    from tasks.errors import StoreError

    if not Path(cfg.db_path).expanduser().is_file():
        return startup_cycle_reason(dict.fromkeys(cfg.models), now, interval)
    try:
        with store.open_store(cfg.db_path, read_only=True, lock_timeout_s=10.0) as con:
            full = {m: store.latest_complete_rounds(con, m, before=now + timedelta(seconds=1))[1] for m in cfg.models}
    except StoreError as exc:
        return f"the database cannot be read now ({exc})"
    return startup_cycle_reason({m: r["round_ts"] if r else None for m, r in full.items()}, now, interval)


def start_first_cycle(deployment: Any) -> str:
    """Create the cycle deployment and one run of it due now (the runner starts it at its first poll); its id."""
    from prefect.deployments import run_deployment

    run = run_deployment(name=deployment.apply(), timeout=0, as_subflow=False, tags=["canary", "start-up"])
    return str(run.id)  # type: ignore[union-attr]


def _api_url() -> str | None:
    """The Prefect API this process talks to: PREFECT_API_URL, else the active Prefect profile's (importing Prefect
    takes seconds: a refusal should not wait for it when the environment says)."""
    if url := os.environ.get("PREFECT_API_URL", "").strip():
        return url
    from prefect.settings import get_current_settings

    return get_current_settings().api.url or None


def _check_reachable(api: str, command: str = "serve") -> None:
    import httpx

    try:
        httpx.get(api.rstrip("/") + "/health", timeout=10).raise_for_status()
    except httpx.HTTPError as e:
        where = httpx.URL(api).copy_with(username=None, password=None)  # no credentials in the message
        raise ConfigError(
            f"{command}: the Prefect API at {where} does not answer ({type(e).__name__}); "
            "is `prefect server start` running, and is PREFECT_API_URL right?"
        ) from None


def serve_deployment(config: Path | None, *, interval: timedelta | None = None, metrics_port: int = 0,
                     metrics_addr: str = "127.0.0.1") -> None:
    cfg = load_config(config)
    every = interval or interval_override()
    api = _api_url()
    if not api:
        raise ConfigError(
            "serve needs a Prefect server: run `prefect server start --host 127.0.0.1` and "
            "export PREFECT_API_URL=http://127.0.0.1:4200/api"
        )
    _check_reachable(api)
    import typer

    from tasks.alerts.route import slack_warning

    if warning := slack_warning():
        typer.echo(f"serve: WARNING: {warning}", err=True)
    # the slow imports (Prefect, the flows: seconds) only once every refusal above had its chance to be quick
    _zombie_runs()
    from prefect import serve

    from flows.deadman import deadman_deployment
    from flows.watch import serve_watcher
    from provider_canary.cli.deadman_cmd import apply_for

    cfg_path = str(Path(config).resolve()) if config else None
    if metrics_port:  # the same collector as `canary metrics` (and the lists), in this process (a daemon thread)
        from tasks.metrics.server import serve_metrics

        serve_metrics([cfg.db_path], cfg, metrics_port, metrics_addr)
    cycle = build_deployment(cfg, cfg_path, interval=every)
    period = every or timedelta(minutes=cfg.interval_min)
    apply_for("canary-cycle", period, command="serve", strict=False)  # Prefect's server tells a silence, serve or not
    _first_cycle(cfg, cycle, period)
    serve_watcher(cfg_path, CYCLE_DEPLOYMENT)  # a daemon thread: it ends with this process
    serve(cycle, deadman_deployment(cfg_path))
    # Prefect's serve() catches the Ctrl-C (SIGINT, what systemd and compose send; or SIGTERM) that stops its runner,
    # pauses the deployments and returns: it returns only so. Exit as an interrupted command does (README).
    raise typer.Exit(INTERRUPTED_EXIT)


def _zombie_runs() -> None:
    """Prefect's zombie-run automation on the server (tasks/orchestration/zombie_runs.py), for this process's heartbeat;
    one line."""
    import typer

    from tasks.orchestration.zombie_runs import NAME, current_heartbeat_s, ensure_zombie_automation, window_s

    try:
        ensure_zombie_automation()
    except Exception as exc:  # an API without automations: runs of a killed process stay Running, said once
        typer.echo(f"serve: the zombie-run automation {NAME} could not be created ({type(exc).__name__}: "
                   f"{str(exc).splitlines()[0][:200] if str(exc) else ''}); a killed run stays Running", err=True)
        return
    typer.echo(f"serve: automation {NAME}: a flow run without a heartbeat for {window_s(current_heartbeat_s())} s "
               "is marked Crashed", err=True)


def _first_cycle(cfg: CanaryConfig, cycle: Any, every: timedelta) -> None:
    """One line: whether a cycle runs at once (and why) or the schedule's first one is awaited."""
    import typer

    from tasks.runtime.clock import utcnow

    reason = startup_cycle_due(cfg, every, utcnow())
    if reason is None:
        typer.echo(f"serve: every model has a complete full round under {every} old; the first cycle comes with"
                   " the schedule", err=True)
        return
    typer.echo(f"serve: {reason}: a cycle runs now (flow run {start_first_cycle(cycle)}), then every {every}",
               err=True)
