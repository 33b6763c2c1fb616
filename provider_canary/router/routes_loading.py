"""Loading the routes file (provider_canary/router/ROUTES.md) into the records of provider_canary/router/routes.py.

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

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from provider_canary.router.routes import Client, Routes
from provider_canary.router.routes_schema import PROVIDER_KEYS, ClientTable, RoutesFile
from tasks.config.schema_lines import Loc, dotted, first_line, model_at
from tasks.core.paths import file_dir, resolve_against
from tasks.errors import RoutesError, read_text_file
from tasks.runtime.secrets import SecretStr

__all__ = ["PATH_SETTINGS", "PROVIDER_KEYS", "load_routes", "parse_client", "parse_routes", "resolve_api_keys"]
#: Settings that name a file or a directory (resolved against the routes file's directory).
PATH_SETTINGS = ("publish_dir", "events_path", "events_db", "savings_path")


def _fail(msg: str) -> RoutesError:
    return RoutesError(f"routes: {msg}")


def _where(loc: Loc) -> str:
    return "[router]" if loc == ("router",) else dotted(loc)


def _unknown(table: type[BaseModel], at: Loc, key: str) -> str:
    """An unknown `key` in the table at `at` (whose model is `table`)."""
    known = ", ".join(sorted(table.model_fields))
    if not at:
        return f"unknown top-level key {key!r} (known: client, router, route)"
    if at == ("router",):
        return f"unknown key router.{key} (known: {known})"
    return f"{dotted(at)}: unknown key {key!r} (known: {known})"


def _told(exc: ValidationError, raw: Any, model: type[BaseModel], at: Loc = ()) -> RoutesError:
    """`exc`'s first error as the one line (`at`: where `raw` sits in the file)."""
    def where(loc: Loc) -> str:
        return _where((*at, *loc))

    def unknown(table: Loc, key: str) -> str:
        return _unknown(model_at(model, table), (*at, *table), key)

    return _fail(first_line(exc, raw, model, unknown, where))


def parse_client(raw: Any, index: int) -> Client:
    """One `[[client]]` table (the `index`th): `canary router keys add` checks a new one with it."""
    try:
        return ClientTable.model_validate(raw).client()
    except ValidationError as exc:
        raise _told(exc, raw, ClientTable, ("client", index)) from None


def _resolved(routes: Routes, base_dir: Path | None) -> Routes:
    """Every path setting (and tier `ignore_file`) made absolute against `base_dir` (`~` expanded)."""
    s = routes.settings
    paths: dict[str, Any] = {k: resolve_against(getattr(s, k), base_dir) for k in PATH_SETTINGS if getattr(s, k)}
    tiers_of = [
        tuple(replace(t, ignore_file=resolve_against(t.ignore_file, base_dir)) if t.ignore_file else t for t in r.tiers)
        for r in routes.routes
    ]
    return replace(routes, settings=replace(s, **paths),
                   routes=tuple(replace(r, tiers=t) for r, t in zip(routes.routes, tiers_of, strict=True)))


def parse_routes(
    raw: Mapping[str, Any], known_savers: frozenset[str] | None = None, base_dir: Path | None = None
) -> Routes:
    """Validate a TOML-shaped mapping; `known_savers` (if given) checks `router.savers` names; `base_dir`
    (if given) is the directory relative paths are resolved against (the routes file's)."""
    try:
        routes = RoutesFile.model_validate(raw, context={"savers": known_savers}).routes()
    except ValidationError as exc:
        raise _told(exc, raw, RoutesFile) from None
    return _resolved(routes, base_dir)


def load_routes(path: str | Path, known_savers: frozenset[str] | None = None) -> Routes:
    p = Path(path)
    text = read_text_file(p, _fail)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(f"{p} is not valid TOML ({exc})") from None
    return parse_routes(raw, known_savers, base_dir=file_dir(p))


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
