"""Where alerts go: the Slack settings read from the environment (or Prefect Secret blocks), checked, with the
transport they pick (tasks/alerts/slack_client.py's module docstring: web, webhook or log)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlparse

from tasks.errors import ConfigError
from tasks.runtime.secrets import SecretStr, read_secret, redact_known_secrets

DEFAULT_TIMEOUT_S = 10
#: How Slack's conversation IDs start (public and private channels; older private channels: G).
CHANNEL_ID_PREFIXES = ("C", "G")


@dataclass(frozen=True)
class SlackSettings:
    bot_token: SecretStr | None = None
    channel: str | None = None
    webhook_url: SecretStr | None = None
    api_url: str | None = None  # WebClient base URL (ends with "/"); None = https://slack.com/api/
    timeout_s: int = DEFAULT_TIMEOUT_S

    @property
    def transport(self) -> Literal["web", "webhook", "log"]:
        if self.bot_token and self.channel:
            return "web"
        return "webhook" if self.webhook_url else "log"

    @property
    def can_check_history(self) -> bool:
        """Whether a post of unknown fate can be looked up before posting again (exactly once): the Web API and
        the channel given by its ID (`C0123...`; conversations.history takes no `#name`). The token also needs
        `channels:history` (`groups:history` for a private channel); without it the lookup answers None."""
        return self.transport == "web" and (self.channel or "").startswith(CHANNEL_ID_PREFIXES)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SlackSettings:
        """Read SLACK_* from `env` (default: the process environment, then Prefect Secret blocks)."""
        use_blocks = env is None
        env = os.environ if env is None else env
        token = read_secret("SLACK_BOT_TOKEN", env=env, use_blocks=use_blocks)
        webhook = read_secret("SLACK_WEBHOOK_URL", env=env, use_blocks=use_blocks)
        channel = (env.get("SLACK_CHANNEL") or "").strip() or None
        api_url = (env.get("SLACK_API_URL") or "").strip() or None
        if token and not channel:
            raise ConfigError("config: SLACK_CHANNEL must be set together with SLACK_BOT_TOKEN")
        if api_url is not None:
            if not _is_http_url(api_url):
                shown = redact_known_secrets(api_url)
                raise ConfigError(f"config: SLACK_API_URL must be an http(s) URL (got {shown!r})")
            api_url = api_url if api_url.endswith("/") else api_url + "/"
        if webhook and not _is_http_url(webhook.get()):
            raise ConfigError("config: SLACK_WEBHOOK_URL must be an http(s) URL (not shown: it is a secret)")
        return cls(bot_token=token, channel=channel, webhook_url=webhook, api_url=api_url)

    def scrub(self, text: str) -> str:
        """Remove our secrets' values and anything shaped like a secret."""
        return redact_known_secrets(text)  # both are SecretStr: known from the moment they exist


def _is_http_url(value: str) -> bool:
    parsed = urlparse(value)
    return parsed.scheme in ("http", "https") and bool(parsed.hostname)
