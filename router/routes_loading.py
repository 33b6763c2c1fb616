"""Loading the routes file (router/ROUTES.md) into the records of router/routes.py.

Pure parsing: `parse_routes(mapping)` validates a TOML-shaped mapping into frozen records and raises
`RoutesError` (one line, naming the key and the bad value) on anything malformed. `load_routes(path)` reads
the file and resolves the paths it names (`publish_dir`, `events_path`, `events_db`, `savings_path`, each
tier's `ignore_file`) against the file's own directory: the router reads the same lists whatever directory it
is started from (`parse_routes(mapping, base_dir=...)` does the same for a mapping).
`resolve_api_keys(routes, env)` turns each tier's `api_key_env` into a `SecretStr` at start-up, so a missing
variable fails fast instead of on the first request. Secrets never live in the file itself: a route
keyed by a client API key names the SHA-256 of that key, never the key.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from router.lists_url import parse_lists_url
from router.routes import DEFAULT_RETRY_FAILED_CHECKS, Client, Route, RouterSettings, Routes, Tier
from tasks.core.redaction import strip_userinfo
from tasks.errors import RoutesError, read_text_file
from tasks.secrets import SecretStr, redact, register_url
from tasks.wire import PROVIDER_KEYS as WIRE_PROVIDER_KEYS

#: Keys OpenRouter accepts in `provider` (ProviderPreferences has additionalProperties: false).
PROVIDER_KEYS = frozenset(WIRE_PROVIDER_KEYS)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Control characters (CR and LF among them): a route name is sent back in a response header.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Settings that name a file or a directory (resolved against the routes file's directory).
PATH_SETTINGS = ("publish_dir", "events_path", "events_db", "savings_path")
#: Integer settings and their bounds.
_INTEGERS = {"token_budget": (0, 1 << 40), "max_body_bytes": (1024, 1 << 34), "judge_queue": (1, 1 << 20),
             "judge_keep_bytes": (1024, 1 << 30), "max_connections": (1, 65536), "allowed_fails": (0, 1 << 20)}
_BOOLEANS = ("judge", "require_ignore_lists", "allow_anonymous")
#: A client's name: a bounded label value that is safe in a log line, a metric and a header.
_CLIENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: An origin as a browser sends it: scheme://host[:port], no path (or "*": any).
_ORIGIN = re.compile(r"^https?://[^/\s?#]+$")

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
        "canary_interval_s",
        "cooldown_s",
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
    if "lists_url" in raw:  # the canary's lists over HTTP (router/lists_poll.py)
        values["lists_url"] = parse_lists_url(raw["lists_url"])
    if "lists_poll_s" in raw:
        values["lists_poll_s"] = _number(raw, "lists_poll_s", 0.0, minimum=0.1)
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
    for key, (low, high) in _INTEGERS.items():
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise _fail(f"router.{key} must be an integer between {low} and {high} (got {value!r})")
            values[key] = value
    for key in _BOOLEANS:
        if key in raw:
            if not isinstance(raw[key], bool):
                raise _fail(f"router.{key} must be true or false (got {raw[key]!r})")
            values[key] = raw[key]
    if "cors_origins" in raw:
        values["cors_origins"] = _origins(raw["cors_origins"])
    return RouterSettings(**values)


def _origins(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(o, str) and (o == "*" or _ORIGIN.match(o)) for o in raw):
        raise _fail(f'router.cors_origins must be a list of origins such as "https://app.example.com" (scheme and '
                    f'host, no path) or ["*"] (got {raw!r})')
    return tuple(o.rstrip("/") for o in raw)


def _budget(raw: Mapping[str, Any], where: str) -> float | None:
    """A route's or a tier's own `first_chunk_budget_s` (None: not set, the default applies)."""
    value = raw.get("first_chunk_budget_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0.001:
        raise _fail(f"{where}.first_chunk_budget_s must be a number >= 0.001 (got {value!r})")
    return float(value)


def _without_query(url: str) -> str:
    """`url` cut at its query or fragment (either may hold a key: never shown)."""
    return url.split("?", 1)[0].split("#", 1)[0]


def _base_url(raw: Any, where: str) -> str:
    """An http(s) URL without credentials (one line, the password never shown): httpx would send `user:password@`
    as Basic auth in place of the tier's key, and the label carrying the URL would put it into /metrics."""
    if isinstance(raw, str):
        register_url(raw)
    try:
        parsed = urlparse(raw) if isinstance(raw, str) else None
        ok = parsed is not None and parsed.scheme in ("http", "https") and bool(parsed.hostname)
        userinfo = parsed is not None and "@" in parsed.netloc
    except ValueError:
        ok, userinfo = False, False
    if not ok:
        shown = redact(_without_query(raw)) if isinstance(raw, str) else raw
        raise _fail(f"{where}.base_url must be an http(s) URL (got {shown!r})")
    if userinfo:
        raise _fail(
            f"{where}.base_url must not hold credentials (got {strip_userinfo(raw)!r} with a user:password@ part): "
            "httpx would send them as Basic auth instead of the tier's key; name the key's variable in api_key_env"
        )
    if "?" in raw or "#" in raw:
        raise _fail(
            f"{where}.base_url must not hold a query or fragment (got {_without_query(raw)!r} followed by one, "
            "not shown): "
            "the router appends /chat/completions to it, and a key there would land in route events, metrics and "
            "logs; name the key's variable in api_key_env"
        )
    return str(raw).rstrip("/")


def _tier(raw: Any, where: str) -> Tier:
    if not isinstance(raw, Mapping):
        raise _fail(f"{where} must be a table (got {raw!r})")
    known = {"base_url", "model", "api_key_env", "provider", "canary_model", "ignore_file", "first_chunk_budget_s"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _fail(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    base_url = _base_url(raw.get("base_url"), where)
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
        base_url=base_url,
        model=model,
        api_key_env=env_name,
        provider=json.loads(json.dumps(dict(provider))),  # plain, detached copy of the TOML table
        canary_model=raw.get("canary_model"),
        ignore_file=raw.get("ignore_file"),
        first_chunk_budget_s=_budget(raw, where),
    )


def _route(raw: Any, index: int) -> Route:
    where = f"route[{index}]"
    if not isinstance(raw, Mapping):
        raise _fail(f"{where} must be a table (got {raw!r})")
    known = {"model", "api_key_sha256", "tier", "retry_failed_checks", "first_chunk_budget_s"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _fail(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    model, digest = raw.get("model"), raw.get("api_key_sha256")
    if (model is None) == (digest is None):
        raise _fail(f"{where} needs exactly one of model or api_key_sha256")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise _fail(f"{where}.model must be a model name (got {model!r})")
    if model is not None and _CONTROL.search(model):
        raise _fail(f"{where}.model must not hold control characters such as CR or LF (got {model!r}): "
                    "it is sent back in the x-canary-route header")
    retry = raw.get("retry_failed_checks", DEFAULT_RETRY_FAILED_CHECKS)
    if not isinstance(retry, bool):
        raise _fail(f"{where}.retry_failed_checks must be true or false (got {retry!r})")
    if digest is not None and (not isinstance(digest, str) or not _SHA256.match(digest)):
        raise _fail(f"{where}.api_key_sha256 must be 64 lower-case hex digits (sha256 of the client key)")
    tiers_raw = raw.get("tier")
    if not isinstance(tiers_raw, list) or not tiers_raw:
        raise _fail(f"{where} needs at least one [[route.tier]]")
    tiers = tuple(_tier(t, f"{where}.tier[{i}]") for i, t in enumerate(tiers_raw))
    key = f"model:{model}" if model is not None else f"key:{digest[:12]}"  # type: ignore[index]
    return Route(key=key, tiers=tiers, model=model, api_key_sha256=digest, retry_failed_checks=retry,
                 first_chunk_budget_s=_budget(raw, where))


def parse_client(raw: Any, index: int) -> Client:
    where = f"client[{index}]"
    if not isinstance(raw, Mapping):
        raise _fail(f"{where} must be a table (got {raw!r})")
    known = {"name", "key_sha256", "requests_per_minute"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _fail(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    name, digest, rpm = raw.get("name"), raw.get("key_sha256"), raw.get("requests_per_minute", 0)
    if not isinstance(name, str) or not _CLIENT_NAME.match(name):
        raise _fail(f"{where}.name must be 1-64 letters, digits, '.', '_' or '-' (got {name!r}): it is a metric "
                    "label and appears in logs")
    if not isinstance(digest, str) or not _SHA256.match(digest):
        raise _fail(f"{where}.key_sha256 must be 64 lower-case hex digits (printf %s \"$KEY\" | sha256sum; "
                    "`canary router keys add NAME` prints one)")
    if isinstance(rpm, bool) or not isinstance(rpm, int) or not 0 <= rpm <= 1_000_000:
        raise _fail(f"{where}.requests_per_minute must be an integer between 0 and 1000000 (got {rpm!r}; 0 = no limit)")
    return Client(name, digest, rpm)


def _clients(raw: Any) -> tuple[Client, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _fail(f"client must be an array of tables ([[client]]), got {raw!r}")
    clients = tuple(parse_client(c, i) for i, c in enumerate(raw))
    for field_name, what in (("name", "name"), ("key_sha256", "key")):
        values = [getattr(c, field_name) for c in clients]
        twice = next((v for v in values if values.count(v) > 1), None)
        if twice is not None:
            shown = twice if field_name == "name" else "(a digest)"
            raise _fail(f"two clients share the {what} {shown}: each client needs its own")
    return clients


def _resolve(path: str, base_dir: Path | None) -> str:
    expanded = Path(path).expanduser()
    return str(expanded if base_dir is None or expanded.is_absolute() else base_dir / expanded)


def _resolved(routes: Routes, base_dir: Path | None) -> Routes:
    """Every path setting (and tier `ignore_file`) made absolute against `base_dir` (`~` expanded)."""
    s = routes.settings
    paths: dict[str, Any] = {k: _resolve(getattr(s, k), base_dir) for k in PATH_SETTINGS if getattr(s, k)}
    tiers_of = [
        tuple(replace(t, ignore_file=_resolve(t.ignore_file, base_dir)) if t.ignore_file else t for t in r.tiers)
        for r in routes.routes
    ]
    return replace(routes, settings=replace(s, **paths),
                   routes=tuple(replace(r, tiers=t) for r, t in zip(routes.routes, tiers_of, strict=True)))


def parse_routes(
    raw: Mapping[str, Any], known_savers: frozenset[str] | None = None, base_dir: Path | None = None
) -> Routes:
    """Validate a TOML-shaped mapping; `known_savers` (if given) checks `router.savers` names; `base_dir`
    (if given) is the directory relative paths are resolved against (the routes file's)."""
    unknown = sorted(set(raw) - {"router", "route", "client"})
    if unknown:
        raise _fail(f"unknown top-level key {unknown[0]!r} (known: client, router, route)")
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
    return _resolved(Routes(settings=settings, routes=routes, clients=_clients(raw.get("client"))), base_dir)


def load_routes(path: str | Path, known_savers: frozenset[str] | None = None) -> Routes:
    p = Path(path)
    text = read_text_file(p, _fail)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(f"{p} is not valid TOML ({exc})") from None
    return parse_routes(raw, known_savers, base_dir=p.expanduser().resolve().parent)


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
