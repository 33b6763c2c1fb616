"""Loading the configuration: the TOML file, the environment, `--set` overrides, and their validation.

`load_config` reads `canary.toml` (or `--config` / `CANARY_CONFIG`), reads the paths it names against the file's
own directory (tasks/core/paths.py: `~` expanded, absolute paths as they are; a named `exclusions_file` that does
not exist is an error, never an empty built-in layer), then applies OPENROUTER_BASE_URL and CANARY_DB (a path
given on the command line or in the environment is read against the working directory); `config_from_mapping`
validates a TOML-shaped mapping into a `CanaryConfig` (tasks/config/__init__.py) with the file's schema
(tasks/config/schema.py: every key's type, bounds and rule, and the rules between keys) and names the first
problem before anything starts, in one line (`config: <key> ...`, tasks/config/schema_lines.py).
`preflight(cfg)` (tasks/config/preflight.py) then checks the file system (writable database directory and
publish_dir, readable exclusions file); the CLI runs it before `run`, `serve` and `demo`.

A `base_url` (or OPENROUTER_BASE_URL) with userinfo (`https://user:pass@host/...`) is refused in one line
that never shows the password: httpx would send it as HTTP Basic in place of the OpenRouter key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import fields, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from tasks.config import FILE_KEYS, PATH_KEYS, CanaryConfig
from tasks.config.schema import INT_BOUNDS, CanaryFile, duration, format_duration, http_url
from tasks.config.schema_lines import first_line
from tasks.core.paths import file_dir, resolve_against
from tasks.core.types import Mode
from tasks.errors import ConfigError

if TYPE_CHECKING:
    from tasks.core.replay_summary import Variant

__all__ = ["INT_BOUNDS", "apply_overrides", "config_from_mapping", "format_duration", "load_config",
           "parse_duration", "resolve_config", "variant"]


def parse_duration(value: object, key: str) -> timedelta:
    """'1d', '36h', '90m', '30s', or a number of days."""
    try:
        return duration(value)
    except ValueError as exc:
        raise ConfigError(f"config: {key} {exc}") from None


def config_from_mapping(raw: Mapping[str, Any]) -> CanaryConfig:
    """Build and validate a config from a TOML-shaped mapping; unknown keys are an error."""
    try:
        return CanaryFile.model_validate(raw).config()
    except ValidationError as exc:
        raise ConfigError(f"config: {first_line(exc, raw, CanaryFile, _unknown)}") from None


def _unknown(_table: tuple[int | str, ...], key: str) -> str:
    return f"unknown key {key!r} (known: {', '.join(sorted(FILE_KEYS))})"


def validate_base_url(url: str, key: str = "base_url") -> str:
    """An http(s) URL without a trailing slash and without userinfo (tasks/config/schema.py `http_url`)."""
    try:
        return http_url(url)
    except ValueError as exc:
        raise ConfigError(f"config: {key} {exc}") from None


def apply_overrides(cfg: CanaryConfig, overrides: Mapping[str, Any]) -> CanaryConfig:
    """`cfg` with `--set key=value` style overrides (values may be strings), fully validated.

    Keys still at their default are left out of the re-validation, so that a default follows the rules
    again (a smaller `probe_budget_s` also lowers the unset timeouts)."""
    defaults = CanaryConfig()
    current = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name in FILE_KEYS}
    raw = {k: v for k, v in current.items() if v != getattr(defaults, k)}
    if "ladder" in raw:
        raw["ladder"] = [format_duration(t) for t in cfg.ladder]
    if "ladder_decay" in raw:
        raw["ladder_decay"] = format_duration(cfg.ladder_decay)
    for key, value in overrides.items():
        if key not in current:
            raise ConfigError(f"config: unknown key {key!r}")
        raw[key] = _coerce_cli_value(value, current[key])
    return replace(config_from_mapping(raw), run_mode=cfg.run_mode)


def _coerce_cli_value(value: Any, current: Any) -> Any:
    if not isinstance(value, str):
        return value
    if isinstance(current, bool):
        return value.lower() in ("1", "true", "yes")
    if isinstance(current, int):
        try:
            return int(value)
        except ValueError:
            return value
    if isinstance(current, float):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(current, list | tuple):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value


def parse_mode(value: Any) -> Mode:
    """`observe` or `enforce` (a file's `mode`, `--mode`), else one clear line."""
    try:
        return Mode(value)
    except ValueError:
        raise ConfigError(f"config: mode must be 'observe' or 'enforce' (got {value!r})") from None


def default_config_path() -> Path:
    return Path(os.environ.get("CANARY_CONFIG", "canary.toml"))


def load_config(path: str | Path | None = None, *, env: Mapping[str, str] | None = None) -> CanaryConfig:
    """Load the TOML file (if it exists, or fail if it was named explicitly), then apply the environment."""
    env = os.environ if env is None else env
    explicit = path is not None or "CANARY_CONFIG" in env
    p = Path(path) if path is not None else Path(env.get("CANARY_CONFIG", "canary.toml"))
    raw: dict[str, Any] = {}
    if p.exists():
        try:
            raw = tomllib.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config: {p} is not valid TOML ({exc})") from None
        raw = paths_resolved(raw, file_dir(p))
    elif explicit:
        raise ConfigError(f"config: file {p} not found")
    cfg = config_from_mapping(raw)
    if "exclusions_file" in raw and not Path(cfg.exclusions_file).is_file():
        raise ConfigError(f"config: exclusions_file: {cfg.exclusions_file} does not exist (a relative path is read "
                          f"against the directory of {p})")
    overrides: dict[str, Any] = {}
    if env.get("OPENROUTER_BASE_URL"):
        overrides["base_url"] = validate_base_url(env["OPENROUTER_BASE_URL"], "OPENROUTER_BASE_URL")
    if env.get("CANARY_DB"):
        overrides["db_path"] = env["CANARY_DB"]
    return replace(cfg, **overrides)


def paths_resolved(raw: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    """`raw` with each path key (`PATH_KEYS`) that is a non-empty string read against `base_dir` (the file's
    directory); anything else is left for the schema to judge."""
    resolved = {k: resolve_against(v, base_dir) for k in PATH_KEYS if isinstance(v := raw.get(k), str) and v.strip()}
    return {**raw, **resolved}


def resolve_config(
    config_path: str | Path | None, overrides: Mapping[str, Any] | None = None, *, base_url: str | None = None,
    db_path: str | None = None, mode: str | None = None,
) -> CanaryConfig:
    """A run's config, assembled in this one place (a round, a cycle, the watcher, the dead man's switch, the
    CLI): the file and its environment (`load_config`), then `overrides` (`--set` style), then the run's own
    parameters: `base_url`, `db_path`, and `mode` for this run only (`run_mode`: never the stored mode)."""
    cfg = load_config(config_path)
    extra: dict[str, Any] = dict(overrides or {})
    extra.update({k: v for k, v in (("base_url", base_url), ("db_path", db_path)) if v})
    cfg = apply_overrides(cfg, extra) if extra else cfg
    return replace(cfg, run_mode=parse_mode(mode)) if mode else cfg


def variant(base: CanaryConfig, overrides: Mapping[str, Any]) -> Variant:
    """A what-if variant (tasks/core/replay_summary.py): `base` with `--set`-style overrides, validated."""
    from tasks.core.replay_summary import Variant  # pandas: only the what-if runs need it (not every command)

    label = " ".join(f"{k}={v}" for k, v in overrides.items()) or "baseline"
    return Variant(label, apply_overrides(base, overrides), sets_mode="mode" in overrides)
