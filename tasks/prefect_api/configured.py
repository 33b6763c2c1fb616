"""The Prefect API the operator configured: PREFECT_API_URL from the environment or the active Prefect profile,
checked with one GET of its /health before the first flow (no answer: one line, exit 2)."""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

from tasks.errors import ConfigError

#: Seconds a configured API gets to answer /health.
HEALTH_TIMEOUT_S = 5.0


def configured_api_url() -> str | None:
    """PREFECT_API_URL as an already imported Prefect sees it (a settings context may set it, as
    `prefect_test_harness` does), else `api_url_from_environment()`: no Prefect import (2-4 s) just for that."""
    if "prefect.settings" in sys.modules:
        from prefect.settings import get_current_settings

        return get_current_settings().api.url or None
    return api_url_from_environment(os.environ)


def api_url_from_environment(env: Mapping[str, str]) -> str | None:
    """PREFECT_API_URL from `env`, else from the active profile's file (`prefect config set ...`)."""
    if url := env.get("PREFECT_API_URL", "").strip():
        return url
    home = Path(env.get("PREFECT_HOME", "~/.prefect")).expanduser()
    path = Path(env.get("PREFECT_PROFILES_PATH", home / "profiles.toml")).expanduser()
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    active = env.get("PREFECT_PROFILE") or profiles.get("active", "ephemeral")
    value = str(profiles.get("profiles", {}).get(active, {}).get("PREFECT_API_URL") or "").strip()
    return value or None


def check_configured_api(url: str) -> None:
    """One GET of `<url>/health`; a server that does not answer is a ConfigError naming it (no userinfo)."""
    import httpx

    from tasks.runtime.secrets import strip_userinfo

    headers = {}
    if key := os.environ.get("PREFECT_API_KEY"):
        headers["Authorization"] = f"Bearer {key}"
    auth = None
    if auth_string := os.environ.get("PREFECT_API_AUTH_STRING"):
        user, _, password = auth_string.partition(":")
        auth = httpx.BasicAuth(user, password)
    health = f"{url.rstrip('/')}/health"
    try:
        reply = httpx.get(health, headers=headers, auth=auth, timeout=HEALTH_TIMEOUT_S)
        problem = None if reply.status_code == 200 else f"HTTP {reply.status_code}"
    except httpx.HTTPError as exc:
        problem = str(exc) or type(exc).__name__
    except ValueError as exc:  # not a URL at all
        problem = f"invalid URL: {exc}"
    if problem:
        raise ConfigError(
            f"prefect: PREFECT_API_URL={strip_userinfo(url)} does not answer /health ({problem}): start that "
            "server, or unset PREFECT_API_URL and canary starts a private one for the command"
        )
