"""`canary deadman-automation`, and the same step in `canary serve`: create or update the Prefect automation that
posts to Slack when no run of the cycle deployment completed for two round intervals
(tasks/orchestration/deadman_automation.py).

`canary serve` applies it at every start for `canary-cycle`; prefect.yaml's `canary-cycle` deployment runs this
command as a build step, so `prefect deploy` applies it too (a shard's deployment passes `--deployment`).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer


def apply_for(deployment: str, interval: timedelta, *, command: str, strict: bool) -> None:
    """Apply the automation and say so in one line on stderr. A failure is one line too: `strict` (the command of
    its own) exits 2 through CanaryError; `canary serve` warns and serves on, its rounds are worth more than it."""
    from tasks.alerts.slack_settings import SlackSettings
    from tasks.errors import CanaryError
    from tasks.orchestration.deadman_automation import apply_deadman_automation, describe
    from tasks.runtime.secrets import redact_known_secrets

    settings = SlackSettings.from_env()
    try:
        applied = apply_deadman_automation(deployment, interval, settings)
    except Exception as exc:  # Prefect's HTTP errors and the like: the automation is not there
        error = redact_known_secrets(f"{type(exc).__name__}: {exc}")[:300]
        why = f"{command}: the dead-man automation was not applied ({error})"
        if strict:
            raise CanaryError(why) from None
        typer.echo(f"{why}; serving without it", err=True)
        return
    typer.echo(f"{command}: {describe(applied)}", err=True)


def deadman_automation(
    config: Annotated[Path | None, typer.Option("--config", help="canary.toml (or CANARY_CONFIG)")] = None,
    deployment: Annotated[
        str, typer.Option("--deployment", help="the cycle deployment it watches (a shard's: canary-cycle-<shard>)")
    ] = "canary-cycle",
) -> None:
    """Create or update the Prefect automation that posts to Slack (SLACK_* settings) when no run of the cycle
    deployment completed for two round intervals; Prefect's server runs it, with no canary process up (needs
    PREFECT_API_URL; `canary serve` does this at every start)."""
    from tasks.config.loading import load_config
    from tasks.errors import ConfigError
    from tasks.prefect_api.configured import check_configured_api, configured_api_url

    cfg = load_config(config)
    api = configured_api_url()
    if not api:
        raise ConfigError("deadman-automation needs the Prefect server's API: export PREFECT_API_URL")
    check_configured_api(api)
    apply_for(deployment, timedelta(minutes=cfg.interval_min), command="deadman-automation", strict=True)
