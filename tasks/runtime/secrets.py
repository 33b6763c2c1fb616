"""Secrets: read inside I/O tasks, known to ONE redactor, never printed.

Every sink (DuckDB rows, rendered text, alerts, artifacts, logs, stderr, route events) calls
`redact_known_secrets`, which removes secrets in two ways (the rules: tasks.core.redaction `redact`):

1. **By value.** Every secret value the process knows: the environment variables in `ENV_SECRETS`, the
   userinfo of `OPENROUTER_BASE_URL`, and every value `register`ed: each `SecretStr` (so every value read from
   the environment or a Prefect Secret block by `read_secret`, and the routes files' key variables), and the
   userinfo of a configured `base_url` (tasks.config calls `register_url` before refusing it). The value,
   every derived form of it (JSON-escaped, URL-encoded, `Bearer <value>` by masking the value itself, base64
   standard and URL-safe with or without padding, at any alignment inside a longer encoded text, and HTTP
   Basic's `base64(user:pass)`, `base64(value:)`, `base64(:value)`) and any run of `FRAGMENT_CHARS` or more
   of its characters (a key cut by a cap: a 15-character prefix) are masked. Values shorter than
   `MIN_VALUE_CHARS` are not redacted by value (URL userinfo still is, by shape).
2. **By shape**: the one documented list, `tasks.core.redaction.SHAPES` (keys `sk-…`, Slack tokens and webhooks,
   URL userinfo, `bearer <token>` in any case, Authorization headers).

The rules themselves are pure (tasks/core/redaction.py); this module owns which values are secret. `MASK`
("***") replaces what is removed. `SecretStr` keeps a value out of reprs, logs and flow parameters.
Importing this module changes nothing. Each entry point (the `canary` CLI, every flow, the probe worker, the
router) calls `install_redaction()` first: from then on the core's renderers and every log record (through
tasks/runtime/log_redaction.py) are redacted with `redact_known_secrets`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from tasks.core.redaction import (
    FRAGMENT_CHARS,
    MASK,
    MIN_VALUE_CHARS,
    SHAPES,
    install_redactor,
    redact,
    redact_shapes,
    redact_values,
    strip_userinfo,
)
from tasks.errors import ConfigError
from tasks.runtime.log_redaction import install_log_redaction

#: Secret environment variables, read afresh at every `redact_known_secrets` (a test or an admin may change them).
ENV_SECRETS = ("OPENROUTER_API_KEY", "SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL")
#: Environment variables holding URLs whose userinfo (user:password@) is a secret.
ENV_URLS = ("OPENROUTER_BASE_URL",)

#: Prefect Secret block names consulted when the environment variable is not set.
SECRET_BLOCKS = {
    "OPENROUTER_API_KEY": "openrouter-api-key",
    "SLACK_BOT_TOKEN": "slack-bot-token",
    "SLACK_WEBHOOK_URL": "slack-webhook-url",
}

_registered: set[str] = set()
_lock = threading.Lock()


class SecretStr:
    """A secret value: shown as '***', and known to the redactor from the moment it exists."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        register(value)

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def register(*values: str | SecretStr | None) -> None:
    """Make values known to `redact_known_secrets` for the life of the process (a URL: its userinfo too)."""
    found = {v for value in values for v in _derived(value)}
    if found - _registered:
        with _lock:
            _registered.update(found)


def register_url(url: str) -> None:
    """A URL that is not itself secret (a base URL): only its userinfo becomes known (config validation then
    refuses such a base URL, in a message that cannot show it)."""
    found = _userinfo_secrets(url)
    if found:
        with _lock:
            _registered.update(found)


def _derived(value: str | SecretStr | None) -> set[str]:
    raw = value.get() if isinstance(value, SecretStr) else value
    if not raw or not isinstance(raw, str):
        return set()
    out = {raw}
    out.update(_userinfo_secrets(raw))
    return out


def _userinfo_secrets(url: str) -> set[str]:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return set()
    if "@" not in parts.netloc:
        return set()
    userinfo = parts.netloc.rpartition("@")[0]
    out = {userinfo}
    if parts.password:
        out.add(parts.password)
    return out


def url_userinfo_secrets(url: str) -> set[str]:
    """The secret parts of a URL's userinfo ('user:pass' and 'pass'); empty when it has none."""
    return _userinfo_secrets(url)


_known_cache: tuple[tuple[Any, ...], tuple[str, ...]] | None = None


def known_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every secret value the process knows now (registered ones, the environment's), longest first."""
    global _known_cache
    env = os.environ if env is None else env
    key = (len(_registered), *(env.get(n) for n in (*ENV_SECRETS, *ENV_URLS)))  # the registry only grows
    cached = _known_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    values = set(_registered)
    for name in ENV_SECRETS:
        if env.get(name):
            values.update(_derived(env[name]))
    for name in ENV_URLS:
        if env.get(name):
            values.update(_userinfo_secrets(env[name]))
    known = tuple(sorted((v for v in values if len(v) >= MIN_VALUE_CHARS), key=lambda v: (-len(v), v)))
    _known_cache = (key, known)
    return known


def redact_known_secrets(text: str) -> str:
    """`text` with every secret value the process knows now (`known_values`: registered ones, the environment's),
    their long fragments and every secret shape replaced by `MASK` (tasks.core.redaction `redact`). Remembers
    nothing: `register` makes a value known. Text without secrets comes back unchanged."""
    if not text:
        return text
    return redact(text, known_values())


def redact_known_secrets_opt(text: str | None) -> str | None:
    """`redact_known_secrets` of a text that may be absent (None stays None)."""
    return None if text is None else redact_known_secrets(text)


#: Secret blocks read during a cycle (`blocks_read_once`): name -> value (None: none); None outside a cycle.
_block_cache: dict[str, str | None] | None = None


@contextlib.contextmanager
def blocks_read_once() -> Iterator[None]:
    """Inside (a cycle), each Secret block is read from Prefect once and every round reuses it, instead of each
    round asking Prefect for every block (a missing block is asked again by the next cycle)."""
    global _block_cache
    outer = _block_cache
    _block_cache = {} if outer is None else outer
    try:
        yield
    finally:
        _block_cache = outer


def _from_block(block_name: str) -> str | None:
    cache = _block_cache
    if cache is not None:
        if block_name not in cache:
            cache[block_name] = _read_block(block_name)
        return cache[block_name]
    return _read_block(block_name)


def _read_block(block_name: str) -> str | None:
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


def preload_secrets(names: Iterable[str] = tuple(SECRET_BLOCKS)) -> None:
    """Read every secret the process may use (environment, else its Prefect Secret block) so that each is
    known to `redact_known_secrets` before the first reply is recorded, not only once the task that needs it runs (and
    install the redaction hooks, if the entry point has not)."""
    install_redaction()
    for name in names:
        read_secret(name)


def install_redaction() -> None:
    """Redact with `redact_known_secrets` from now on: the core's renderers
    (`tasks.core.redaction.redact_process_secrets`) mask every value this process knows, not only shapes, and so
    does every log record (tasks/runtime/log_redaction.py). Idempotent; entry points call it first (importing a module
    installs nothing)."""
    install_redactor(redact_known_secrets)
    install_log_redaction()

__all__ = [
    "ENV_SECRETS", "ENV_URLS", "FRAGMENT_CHARS", "MASK", "MIN_VALUE_CHARS", "SECRET_BLOCKS", "SHAPES",
    "SecretStr", "install_redaction", "known_values", "preload_secrets", "read_secret",
    "redact_known_secrets", "redact_known_secrets_opt", "redact_shapes", "redact_values", "register", "register_url",
    "strip_userinfo",
    "url_userinfo_secrets",
]
