"""Loading the routes file (router/ROUTES.md) into the records of router/routes.py.

Pure parsing: `parse_routes(mapping)` validates a TOML-shaped mapping into frozen records and raises
`RoutesError` (one line, naming the key and the bad value) on anything malformed. `load_routes(path)` reads
the file. `resolve_api_keys(routes, env)` turns each tier's `api_key_env` into a `SecretStr` at start-up, so a
missing variable fails fast instead of on the first request. Secrets never live in the file itself: a route
keyed by a client API key names the SHA-256 of that key, never the key.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from router.routes import Route, RouterSettings, Routes, Tier
from tasks.errors import RoutesError, read_text_file
from tasks.secrets import SecretStr
from tasks.wire import PROVIDER_KEYS as WIRE_PROVIDER_KEYS

#: Keys OpenRouter accepts in `provider` (ProviderPreferences has additionalProperties: false).
PROVIDER_KEYS = frozenset(WIRE_PROVIDER_KEYS)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

def _fail(msg: str) -> RoutesError:
    return RoutesError(f"routes: {msg}")


def _number(raw: Mapping[str, Any], key: str, default: float, *, minimum: float = 0.0) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise _fail(f"router.{key} must be a number >= {minimum:g} (got {value!r})")
    return float(value)


def _settings(raw: Any, known_savers: frozenset[str] | None) -> RouterSettings:
    if raw is None:
        return RouterSettings()
    if not isinstance(raw, Mapping):
        raise _fail(f"[router] must be a table (got {raw!r})")
    known = {f for f in RouterSettings.__dataclass_fields__}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _fail(f"unknown key router.{unknown[0]} (known: {', '.join(sorted(known))})")
    values: dict[str, Any] = {}
    for key in (
        "first_chunk_budget_s",
        "connect_timeout_s",
        "idle_timeout_s",
        "request_timeout_s",
        "flush_interval_s",
    ):
        if key in raw:
            values[key] = _number(raw, key, 0.0, minimum=0.001)
    if "max_cooldown_s" in raw:
        values["max_cooldown_s"] = _number(raw, "max_cooldown_s", 0.0)
    for key in ("publish_dir", "events_path", "savings_path"):
        if key in raw:
            if not isinstance(raw[key], str) or not raw[key]:
                raise _fail(f"router.{key} must be a path (got {raw[key]!r})")
            values[key] = raw[key]
    if "events_db" in raw:
        if not isinstance(raw["events_db"], str):
            raise _fail(f'router.events_db must be a path or "" (got {raw["events_db"]!r})')
        values["events_db"] = raw["events_db"] or None
    if "savers" in raw:
        savers = raw["savers"]
        if not isinstance(savers, list) or not all(isinstance(s, str) for s in savers):
            raise _fail(f"router.savers must be a list of saver names (got {savers!r})")
        bad = [s for s in savers if known_savers is not None and s not in known_savers]
        if bad:
            raise _fail(
                f"router.savers: unknown saver {bad[0]!r} (known: {', '.join(sorted(known_savers or ()))})"
            )
        values["savers"] = tuple(savers)
    if "token_budget" in raw:
        budget = raw["token_budget"]
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise _fail(f"router.token_budget must be an integer >= 0 (got {budget!r})")
        values["token_budget"] = budget
    return RouterSettings(**values)


def _tier(raw: Any, where: str) -> Tier:
    if not isinstance(raw, Mapping):
        raise _fail(f"{where} must be a table (got {raw!r})")
    known = {"base_url", "model", "api_key_env", "provider", "canary_model", "ignore_file"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _fail(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    base_url = raw.get("base_url")
    parsed = urlparse(base_url) if isinstance(base_url, str) else None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise _fail(f"{where}.base_url must be an http(s) URL (got {base_url!r})")
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        raise _fail(f"{where}.model must be a model id (got {model!r})")
    env_name = raw.get("api_key_env")
    if env_name is not None and (not isinstance(env_name, str) or not _ENV_NAME.match(env_name)):
        raise _fail(f"{where}.api_key_env must be an environment variable name (got {env_name!r})")
    provider = raw.get("provider", {})
    if not isinstance(provider, Mapping):
        raise _fail(f"{where}.provider must be a table (got {provider!r})")
    bad = sorted(set(provider) - PROVIDER_KEYS)
    if bad:
        raise _fail(f"{where}.provider: unknown key {bad[0]!r} (OpenRouter rejects it)")
    ignore = provider.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(t, str) for t in ignore):
        raise _fail(f"{where}.provider.ignore must be a list of provider tags (got {ignore!r})")
    for key in ("canary_model", "ignore_file"):
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise _fail(f"{where}.{key} must be a string (got {value!r})")
    return Tier(
        base_url=base_url.rstrip("/"),  # type: ignore[union-attr]
        model=model,
        api_key_env=env_name,
        provider=json.loads(json.dumps(dict(provider))),  # plain, detached copy of the TOML table
        canary_model=raw.get("canary_model"),
        ignore_file=raw.get("ignore_file"),
    )


def _route(raw: Any, index: int) -> Route:
    where = f"route[{index}]"
    if not isinstance(raw, Mapping):
        raise _fail(f"{where} must be a table (got {raw!r})")
    unknown = sorted(set(raw) - {"model", "api_key_sha256", "tier"})
    if unknown:
        raise _fail(f"{where}: unknown key {unknown[0]!r} (known: api_key_sha256, model, tier)")
    model, digest = raw.get("model"), raw.get("api_key_sha256")
    if (model is None) == (digest is None):
        raise _fail(f"{where} needs exactly one of model or api_key_sha256")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise _fail(f"{where}.model must be a model name (got {model!r})")
    if digest is not None and (not isinstance(digest, str) or not _SHA256.match(digest)):
        raise _fail(f"{where}.api_key_sha256 must be 64 lower-case hex digits (sha256 of the client key)")
    tiers_raw = raw.get("tier")
    if not isinstance(tiers_raw, list) or not tiers_raw:
        raise _fail(f"{where} needs at least one [[route.tier]]")
    tiers = tuple(_tier(t, f"{where}.tier[{i}]") for i, t in enumerate(tiers_raw))
    key = f"model:{model}" if model is not None else f"key:{digest[:12]}"  # type: ignore[index]
    return Route(key=key, tiers=tiers, model=model, api_key_sha256=digest)


def parse_routes(raw: Mapping[str, Any], known_savers: frozenset[str] | None = None) -> Routes:
    """Validate a TOML-shaped mapping; `known_savers` (if given) checks `router.savers` names."""
    unknown = sorted(set(raw) - {"router", "route"})
    if unknown:
        raise _fail(f"unknown top-level key {unknown[0]!r} (known: router, route)")
    settings = _settings(raw.get("router"), known_savers)
    routes_raw = raw.get("route")
    if not isinstance(routes_raw, list) or not routes_raw:
        raise _fail("the file needs at least one [[route]]")
    routes = tuple(_route(r, i) for i, r in enumerate(routes_raw))
    seen: set[str] = set()
    for route in routes:
        if route.key in seen:
            raise _fail(f"two routes share the key {route.key!r}")
        seen.add(route.key)
    return Routes(settings=settings, routes=routes)


def load_routes(path: str | Path, known_savers: frozenset[str] | None = None) -> Routes:
    p = Path(path)
    text = read_text_file(p, _fail)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(f"{p} is not valid TOML ({exc})") from None
    return parse_routes(raw, known_savers)


def resolve_api_keys(routes: Routes, env: Mapping[str, str]) -> dict[str, SecretStr]:
    """Every `api_key_env` named by a tier, read once; a missing one is a RoutesError naming the variable."""
    keys: dict[str, SecretStr] = {}
    for route in routes.routes:
        for i, tier in enumerate(route.tiers):
            name = tier.api_key_env
            if name is None or name in keys:
                continue
            value = env.get(name)
            if not value:
                raise _fail(f"{route.key} tier {i + 1}: environment variable {name} is not set")
            keys[name] = SecretStr(value)
    return keys
