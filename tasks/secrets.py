"""Secrets: read inside I/O tasks from the environment or a Prefect Secret block; never printed.

`SecretStr` keeps the value out of reprs, logs and flow parameters (the Prefect UI shows parameters).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from tasks.errors import ConfigError

#: Prefect Secret block names consulted when the environment variable is not set.
SECRET_BLOCKS = {
    "OPENROUTER_API_KEY": "openrouter-api-key",
    "SLACK_BOT_TOKEN": "slack-bot-token",
    "SLACK_WEBHOOK_URL": "slack-webhook-url",
}

_SECRET_PATTERNS = re.compile(
    r"(sk-or-v1-[A-Za-z0-9_\-]+|sk-[A-Za-z0-9_\-]{16,}|xox[abpr]-[A-Za-z0-9\-]+|"
    r"hooks\.slack\.com/services/[A-Za-z0-9/]+|Bearer\s+[A-Za-z0-9._\-]+)"
)


class SecretStr:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def redact(text: str, *secrets: str | SecretStr | None) -> str:
    """Remove known secret values and anything shaped like a key or token from `text`."""
    for s in secrets:
        value = s.get() if isinstance(s, SecretStr) else s
        if value:
            text = text.replace(value, "***")
    return _SECRET_PATTERNS.sub("***", text)


def _from_block(block_name: str) -> str | None:
    try:
        from prefect.blocks.system import Secret

        block: Any = Secret.load(block_name, _sync=True)  # type: ignore[call-arg]
        value = block.get()
        return value if isinstance(value, str) and value else None
    except Exception:  # no server, no block, or the block is unreadable: fall through
        return None


def read_secret(
    name: str, *, env: Mapping[str, str] | None = None, use_blocks: bool = True, required: bool = False
) -> SecretStr | None:
    env = os.environ if env is None else env
    value = env.get(name)
    if not value and use_blocks and name in SECRET_BLOCKS:
        value = _from_block(SECRET_BLOCKS[name])
    if not value:
        if required:
            raise ConfigError(
                f"config: {name} is not set (export it, or create the Prefect Secret block "
                f"'{SECRET_BLOCKS.get(name, name.lower())}')"
            )
        return None
    return SecretStr(value)
