"""Where alerts go, said where the operator looks: `canary serve` at its start and `canary status` warn when this
process has no Slack settings, so alerts would only reach its log (tasks/alerts/slack_client.py, the `log` transport).

    warning = slack_warning()            # None when Slack is configured
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from tasks.errors import ConfigError

#: Said when no Slack setting is found: alerts are then WARNING lines in the log of the process that sends them.
NO_SLACK = ("Slack is not configured here (SLACK_BOT_TOKEN + SLACK_CHANNEL, or SLACK_WEBHOOK_URL, or their Prefect "
            "Secret blocks): alerts go only to the log of the process that sends them, as WARNING lines; nobody is "
            "notified")


def slack_warning(env: Mapping[str, str] | None = None, *, use_blocks: bool | None = None) -> str | None:
    """The one-line warning about this process's Slack settings, None when alerts go to Slack. `env`: default the
    process environment; `use_blocks` (default: when a Prefect API is configured) also looks in the Prefect Secret
    blocks, as delivery does."""
    from tasks.alerts.slack_settings import SlackSettings

    env = os.environ if env is None else env
    blocks = bool(env.get("PREFECT_API_URL")) if use_blocks is None else use_blocks
    try:
        settings = SlackSettings.from_env(None if blocks and env is os.environ else env)
    except ConfigError as exc:
        return f"Slack settings are not usable: {exc}"
    return NO_SLACK if settings.transport == "log" else None
