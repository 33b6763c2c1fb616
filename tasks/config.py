"""Configuration: one TOML file, every default in one place (docs/design.md "Configuration").

The file is `canary.toml` at the repo root by default (`--config` or `CANARY_CONFIG` override it). Keys are
flat, named as in docs/design.md. Env: OPENROUTER_BASE_URL overrides `base_url`, CANARY_DB overrides
`db_path`. Secrets (OPENROUTER_API_KEY, Slack tokens) are not config: they are read by the I/O tasks.

Every knob below: meaning, unit, default, why.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tasks.errors import ConfigError
from tasks.types import Mode

#: All 17 interface languages, in rotation order.
ALL_LANGUAGES: tuple[str, ...] = (
    "en", "es", "pt", "fr", "de", "it", "ru", "uk", "pl", "tr", "ja", "ko", "zh", "id", "hi", "ar", "vi",
)

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
#: A probe is only about latency when the model is slow to *start*; 10 s is deliberately generous.
DEFAULT_TTFT_S = 10.0
#: How long to wait for the TCP/TLS connection. Past it the attempt is `transport` (connect).
DEFAULT_CONNECT_TIMEOUT_S = 10.0
#: Longest silence between two bytes once the response has begun. Keep-alive comments reset it, so an
#: endpoint that sends only keep-alives is still cut by `probe_budget_s`.
DEFAULT_READ_TIMEOUT_S = 30.0
#: Hard wall-clock budget for one attempt, headers to [DONE]. Past it the stream is cut (`timeout`).
DEFAULT_PROBE_BUDGET_S = 60.0
#: Reply text kept per attempt (bytes of UTF-8). Longer replies are cut and flagged `text_truncated`.
DEFAULT_TEXT_CAP_BYTES = 16 * 1024
#: Parallel probe requests per round (the Prefect thread pool size).
DEFAULT_CONCURRENCY = 16
#: Consecutive failing rounds before a suspension. One bad round is not enough.
DEFAULT_FAIL_ROUNDS = 2
#: Consecutive clean rounds that restore a suspended endpoint early.
DEFAULT_RESTORE_ROUNDS = 2
#: Routable endpoints (not excluded by any layer) that must remain after a suspension.
DEFAULT_MIN_HOSTS = 2
#: Suspension lengths by ladder step; the last one repeats.
DEFAULT_LADDER: tuple[timedelta, ...] = (timedelta(days=1), timedelta(days=3), timedelta(days=7))
#: Time since the last suspension ended, with no new one, after which the ladder restarts.
DEFAULT_LADDER_DECAY = timedelta(days=14)
#: Minutes between rounds (the deployment's interval).
DEFAULT_INTERVAL_MIN = 30
DEFAULT_DB_PATH = "canary.duckdb"
#: Where the published ignore lists (one JSON per model) are written.
DEFAULT_PUBLISH_DIR = "published"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: object, key: str) -> timedelta:
    """'1d', '36h', '90m', '30s', or a number of days."""
    if isinstance(value, bool):
        raise ConfigError(f"config: {key} must be a duration like '1d' or '12h' (got {value!r})")
    if isinstance(value, int | float):
        return timedelta(days=float(value))
    if isinstance(value, str) and (m := _DURATION.match(value)):
        return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    raise ConfigError(f"config: {key} must be a duration like '1d' or '12h' (got {value!r})")


def format_duration(td: timedelta) -> str:
    s = int(td.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s % size == 0 and s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


@dataclass(frozen=True)
class CanaryConfig:
    models: tuple[str, ...] = ("meta-llama/llama-3.3-70b-instruct",)
    mode: Mode = Mode.OBSERVE
    base_url: str = DEFAULT_BASE_URL
    db_path: str = DEFAULT_DB_PATH
    publish_dir: str = DEFAULT_PUBLISH_DIR
    exclusions_file: str = "exclusions.toml"
    refusal_controls: tuple[str, ...] = ()
    languages: tuple[str, ...] = ALL_LANGUAGES
    ttft_s: float = DEFAULT_TTFT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    probe_budget_s: float = DEFAULT_PROBE_BUDGET_S
    text_cap_bytes: int = DEFAULT_TEXT_CAP_BYTES
    concurrency: int = DEFAULT_CONCURRENCY
    fail_rounds: int = DEFAULT_FAIL_ROUNDS
    restore_rounds: int = DEFAULT_RESTORE_ROUNDS
    min_hosts: int = DEFAULT_MIN_HOSTS
    ladder: tuple[timedelta, ...] = DEFAULT_LADDER
    ladder_decay: timedelta = DEFAULT_LADDER_DECAY
    interval_min: int = DEFAULT_INTERVAL_MIN

    def with_overrides(self, overrides: Mapping[str, Any]) -> CanaryConfig:
        """Apply `--set key=value` style overrides (values may be strings) with full validation."""
        raw = {f.name: getattr(self, f.name) for f in fields(self)}
        raw["ladder"] = [format_duration(t) for t in self.ladder]
        raw["ladder_decay"] = format_duration(self.ladder_decay)
        for key, value in overrides.items():
            if key not in raw:
                raise ConfigError(f"config: unknown key {key!r}")
            raw[key] = _coerce_cli_value(value, raw[key])
        return config_from_mapping(raw)


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


def _expect(raw: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], what: str) -> Any:
    value = raw[key]
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise ConfigError(f"config: {key} must be {what} (got {value!r})")
    if not isinstance(value, kinds):
        raise ConfigError(f"config: {key} must be {what} (got {value!r})")
    return value


def _str_list(raw: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = raw[key]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"config: {key} must be a list of strings (got {value!r})")
    return tuple(value)


def validate_base_url(url: str, key: str = "base_url") -> str:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(f"config: {key} must be an http(s) URL (got {url!r})")
    return url.rstrip("/")


def config_from_mapping(raw: Mapping[str, Any]) -> CanaryConfig:
    """Build and validate a config from a TOML-shaped mapping; unknown keys are an error."""
    known = {f.name for f in fields(CanaryConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"config: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    cfg = CanaryConfig()
    values: dict[str, Any] = {}
    if "models" in raw:
        values["models"] = _str_list(raw, "models")
        if not values["models"]:
            raise ConfigError("config: models must name at least one model")
        for m in values["models"]:
            if m.count("/") != 1 or " " in m:
                raise ConfigError(f"config: models entries must look like 'author/slug' (got {m!r})")
    if "mode" in raw:
        try:
            values["mode"] = Mode(raw["mode"])
        except ValueError:
            raise ConfigError(f"config: mode must be 'observe' or 'enforce' (got {raw['mode']!r})") from None
    if "base_url" in raw:
        values["base_url"] = validate_base_url(_expect(raw, "base_url", str, "a URL"))
    for key in ("db_path", "publish_dir", "exclusions_file"):
        if key in raw:
            values[key] = _expect(raw, key, str, "a path")
    if "refusal_controls" in raw:
        values["refusal_controls"] = _str_list(raw, "refusal_controls") if raw["refusal_controls"] else ()
    if "languages" in raw:
        langs = _str_list(raw, "languages")
        bad = [lang for lang in langs if lang not in ALL_LANGUAGES]
        if bad or not langs:
            got = bad[0] if bad else "[]"
            raise ConfigError(f"config: languages must be among {', '.join(ALL_LANGUAGES)} (got {got!r})")
        values["languages"] = langs
    for key in ("ttft_s", "connect_timeout_s", "read_timeout_s", "probe_budget_s"):
        if key in raw:
            v = float(_expect(raw, key, (int, float), "a number of seconds"))
            if v <= 0:
                raise ConfigError(f"config: {key} must be > 0 (got {v})")
            values[key] = v
    for key, minimum in (
        ("text_cap_bytes", 256),
        ("concurrency", 1),
        ("fail_rounds", 1),
        ("restore_rounds", 1),
        ("min_hosts", 0),
        ("interval_min", 1),
    ):
        if key in raw:
            v = _expect(raw, key, int, "an integer")
            if v < minimum:
                raise ConfigError(f"config: {key} must be >= {minimum} (got {v})")
            values[key] = v
    if "ladder" in raw:
        steps = raw["ladder"]
        if not isinstance(steps, list | tuple) or not steps:
            raise ConfigError(f"config: ladder must be a non-empty list of durations (got {steps!r})")
        values["ladder"] = tuple(parse_duration(s, "ladder") for s in steps)
    if "ladder_decay" in raw:
        values["ladder_decay"] = parse_duration(raw["ladder_decay"], "ladder_decay")
    return replace(cfg, **values)


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
    elif explicit:
        raise ConfigError(f"config: file {p} not found")
    cfg = config_from_mapping(raw)
    overrides: dict[str, Any] = {}
    if env.get("OPENROUTER_BASE_URL"):
        overrides["base_url"] = validate_base_url(env["OPENROUTER_BASE_URL"], "OPENROUTER_BASE_URL")
    if env.get("CANARY_DB"):
        overrides["db_path"] = env["CANARY_DB"]
    return replace(cfg, **overrides)
