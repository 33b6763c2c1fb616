"""Loading the configuration: the TOML file, the environment, `--set` overrides, and their validation.

`load_config` reads `canary.toml` (or `--config` / `CANARY_CONFIG`), then applies OPENROUTER_BASE_URL and
CANARY_DB; `config_from_mapping` validates a TOML-shaped mapping into a `CanaryConfig` (tasks/config.py).

Validation names the problem before anything starts (`config: <key> ...`, one line): numbers are finite and
positive; `ttft_s < probe_budget_s`, `connect_timeout_s <= probe_budget_s`, `read_timeout_s <= probe_budget_s`
(the two timeouts, when not set, default to the smaller of their default and `probe_budget_s`),
`probe_budget_s <= interval_min` minutes (an attempt fits in a round interval); `confirm_after_min <
interval_min` (unless 0); every ladder step is at least one round interval; paths are non-empty.
`preflight(cfg)` (tasks/config_preflight.py) then checks the file system (writable database directory and
publish_dir, readable exclusions file); the CLI runs it before `run`, `serve` and `demo`.

A `base_url` (or OPENROUTER_BASE_URL) with userinfo (`https://user:pass@host/...`) is refused in one line
that never shows the password: httpx would send it as HTTP Basic in place of the OpenRouter key.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import fields, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from tasks.config import ALL_LANGUAGES, FILE_KEYS, LIVE_SOURCES, NEVER_HARD, CanaryConfig
from tasks.core.plan import is_model_id
from tasks.core.types import Mode
from tasks.errors import ConfigError
from tasks.secrets import redact, register_url, strip_userinfo

if TYPE_CHECKING:
    from tasks.core.replay_summary import Variant

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Longest duration accepted (about 27 years): beyond it timedelta arithmetic overflows.
_MAX_DAYS = 10_000


def parse_duration(value: object, key: str) -> timedelta:
    """'1d', '36h', '90m', '30s', or a number of days."""
    if isinstance(value, bool):
        raise ConfigError(f"config: {key} must be a duration like '1d' or '12h' (got {value!r})")
    if isinstance(value, int | float):
        if not math.isfinite(value) or abs(value) > _MAX_DAYS:
            raise ConfigError(f"config: {key} must be a finite duration like '1d' or '12h' (got {value!r})")
        return timedelta(days=float(value))
    if isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
        if seconds > _MAX_DAYS * 86400:
            raise ConfigError(f"config: {key} must be a finite duration like '1d' or '12h' (got {value!r})")
        return timedelta(seconds=seconds)
    raise ConfigError(f"config: {key} must be a duration like '1d' or '12h' (got {value!r})")


def format_duration(td: timedelta) -> str:
    s = int(td.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s % size == 0 and s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"

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
    """An http(s) URL without a trailing slash and without userinfo.

    `user:password@` in the URL is refused: httpx would send it as `Authorization: Basic ...` in place of the
    OpenRouter key (every probe would get 401), and an upstream echoing that header would carry a derived
    form of the password into replies. The userinfo is still registered with the redactor first, so even
    this refusal cannot show it."""
    register_url(url)
    try:
        parsed = urlparse(url)
        ok = parsed.scheme in ("http", "https") and bool(parsed.hostname)
        has_userinfo = "@" in parsed.netloc
    except ValueError:
        ok, has_userinfo = False, False
    if not ok:
        raise ConfigError(f"config: {key} must be an http(s) URL (got {redact(url)!r})")
    if has_userinfo:
        raise ConfigError(
            f"config: {key} must not hold credentials (got {strip_userinfo(url)!r} with a user:password@ part): "
            "httpx would send them as Basic auth instead of the OpenRouter key; put the key in OPENROUTER_API_KEY"
        )
    return url.rstrip("/")


def validate_prometheus_url(url: str) -> str:
    """`prometheus_url`: an http(s) URL (a path prefix is fine: a Prometheus behind `--web.route-prefix`) with
    no credentials, no query and no fragment: the watcher appends `/api/v1/query` to it."""
    register_url(url)
    try:
        parsed = urlparse(url)
        ok = parsed.scheme in ("http", "https") and bool(parsed.hostname)
        extra = "@" in parsed.netloc or bool(parsed.query) or bool(parsed.fragment) or url.endswith(("?", "#"))
    except ValueError:
        ok, extra = False, False
    if not ok or extra:
        raise ConfigError(f"config: prometheus_url must be an http(s) URL without credentials, query or fragment, "
                          f"to which /api/v1/query is appended (got {strip_userinfo(redact(url))!r})")
    return url.rstrip("/")


#: Integer keys: (smallest, largest) accepted. The upper bounds refuse typos and runaway values (a
#: `concurrency` of 1e11 would open that many sockets): far above any real setup, far below any overflow.
INT_BOUNDS: dict[str, tuple[int, int]] = {
    "text_cap_bytes": (256, 16 * 1024 * 1024),
    "concurrency": (1, 4096),
    "models_in_flight": (1, 1024),
    "fail_rounds": (1, 1000),
    "restore_rounds": (1, 1000),
    "min_hosts": (0, 1000),
    "interval_min": (1, 7 * 24 * 60),
    "confirm_after_min": (0, 7 * 24 * 60),
    "suspect_confirm_after_s": (10, 24 * 3600),
    "suspect_window_s": (60, 7 * 24 * 3600),
    "suspect_min_requests": (1, 1_000_000),
    "suspect_cooldown_s": (0, 7 * 24 * 3600),
}
MAX_BUDGET_USD_PER_DAY = 1_000_000.0
#: Directories a publish_dir may never be: the canary writes its lists and a `.canary-db` marker there.
SYSTEM_DIRS = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc",
                         "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/mnt", "/media"})


def _refuse_system_dir(value: str) -> None:
    """publish_dir may not be the file system's root, a top-level or system directory, or a home directory."""
    path = Path(value).expanduser()
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        resolved = path.absolute()
    home = Path.home()
    if str(resolved) in SYSTEM_DIRS or len(resolved.parts) <= 2 or resolved in (home, home.parent):
        raise ConfigError(
            f"config: publish_dir {value!r} is a system or home directory ({resolved}); the canary writes its "
            "ignore lists and a .canary-db marker there: name a directory of its own"
        )


def config_from_mapping(raw: Mapping[str, Any]) -> CanaryConfig:
    """Build and validate a config from a TOML-shaped mapping; unknown keys are an error."""
    known = FILE_KEYS
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
            if not is_model_id(m):
                raise ConfigError(f"config: models entries must look like 'author/slug', without spaces or control "
                                  f"characters (got {m!r})")
        twice = next((m for i, m in enumerate(values["models"]) if m in values["models"][:i]), None)
        if twice is not None:
            raise ConfigError(f"config: models lists {twice!r} twice (a model has one round per cycle)")
    if "mode" in raw:
        values["mode"] = parse_mode(raw["mode"])
    if "live_source" in raw:
        values["live_source"] = _expect(raw, "live_source", str, '"db" or "prometheus"')
        if values["live_source"] not in LIVE_SOURCES:
            raise ConfigError(f'config: live_source must be "db" or "prometheus" (got {values["live_source"]!r})')
    if "prometheus_url" in raw:
        values["prometheus_url"] = validate_prometheus_url(_expect(raw, "prometheus_url", str, "a URL"))
    if "base_url" in raw:
        values["base_url"] = validate_base_url(_expect(raw, "base_url", str, "a URL"))
    for key in ("db_path", "publish_dir", "exclusions_file"):
        if key in raw:
            values[key] = _expect(raw, key, str, "a path")
            if not values[key].strip():
                raise ConfigError(f"config: {key} must be a non-empty path (got {values[key]!r})")
    if "publish_dir" in values:
        _refuse_system_dir(values["publish_dir"])
    for key in ("runbook_base_url", "grafana_url"):  # links in Slack alerts: "" for none
        if key in raw:
            link = _expect(raw, key, str, 'an http(s) URL or ""').strip()
            values[key] = validate_base_url(link, key) + ("/" if key == "runbook_base_url" else "") if link else ""
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
            if not math.isfinite(v) or v <= 0:
                raise ConfigError(f"config: {key} must be a finite number of seconds > 0 (got {v})")
            values[key] = v
    for key, (minimum, maximum) in INT_BOUNDS.items():
        if key in raw:
            v = _expect(raw, key, int, "an integer")
            if not minimum <= v <= maximum:
                raise ConfigError(f"config: {key} must be between {minimum} and {maximum} (got {v})")
            values[key] = v
    if "budget_usd_per_day" in raw:
        v = float(_expect(raw, "budget_usd_per_day", (int, float), "a number of US dollars"))
        if not math.isfinite(v) or not 0 <= v <= MAX_BUDGET_USD_PER_DAY:
            raise ConfigError(f"config: budget_usd_per_day must be between 0 and {MAX_BUDGET_USD_PER_DAY:g}, "
                              f"0 = no budget (got {v:g})")
        values["budget_usd_per_day"] = v
    if "hard_contracts" in raw:
        values["hard_contracts"] = _hard_contracts(raw)
    for key, top in (("suspect_failure_rate", 1.0), ("suspect_peer_margin", 1.0), ("suspect_uptime_drop", 100.0)):
        if key in raw:
            v = float(_expect(raw, key, (int, float), "a number"))
            if not math.isfinite(v) or not 0 <= v <= top or (key == "suspect_failure_rate" and v == 0):
                low = "> 0" if key == "suspect_failure_rate" else ">= 0"
                raise ConfigError(f"config: {key} must be {low} and <= {top:g} (got {v:g})")
            values[key] = v
    if "ladder" in raw:
        steps = raw["ladder"]
        if not isinstance(steps, list | tuple) or not steps:
            raise ConfigError(f"config: ladder must be a non-empty list of durations (got {steps!r})")
        values["ladder"] = tuple(parse_duration(s, "ladder") for s in steps)
        interval = timedelta(minutes=values.get("interval_min", cfg.interval_min))
        for raw_step, step in zip(steps, values["ladder"], strict=True):
            if step < interval:
                raise ConfigError(
                    f"config: ladder steps must be at least one round interval "
                    f"(interval_min = {format_duration(interval)}) (got {raw_step!r})"
                )
    if "ladder_decay" in raw:
        values["ladder_decay"] = parse_duration(raw["ladder_decay"], "ladder_decay")
        if values["ladder_decay"] < timedelta(0):
            raise ConfigError(f"config: ladder_decay must be >= 0 (got {raw['ladder_decay']!r})")
    budget = values.get("probe_budget_s", cfg.probe_budget_s)
    for key in ("connect_timeout_s", "read_timeout_s"):  # unset timeouts follow a smaller budget
        values.setdefault(key, min(getattr(cfg, key), budget))
    return _check_relations(replace(cfg, **values))


def _hard_contracts(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """Contract names; `ttft` is never hard (slowness is often load: the next full round decides)."""
    from tasks.core.types import Contract

    value = raw["hard_contracts"]
    if isinstance(value, str):  # `--set hard_contracts=language,opening` (the default, None, gives no type)
        value = [v.strip() for v in value.split(",") if v.strip()]
    names = _str_list({"hard_contracts": value}, "hard_contracts") if value else ()
    known = {str(c) for c in Contract} - NEVER_HARD
    for name in names:
        if name not in known:
            raise ConfigError(f"config: hard_contracts entries must be among {', '.join(sorted(known))} "
                              f"(got {name!r})")
    return tuple(dict.fromkeys(names))


def _check_relations(cfg: CanaryConfig) -> CanaryConfig:
    """The rules between keys (each message names the key to change and both values)."""
    budget = cfg.probe_budget_s
    if cfg.confirm_after_min and not cfg.confirm_after_min < cfg.interval_min:
        raise ConfigError(
            f"config: confirm_after_min ({cfg.confirm_after_min}) must be < interval_min ({cfg.interval_min}): "
            "a confirmation comes before the next round (0 turns confirmation rounds off)"
        )
    if not cfg.ttft_s < budget:
        raise ConfigError(f"config: ttft_s ({cfg.ttft_s:g}) must be < probe_budget_s ({budget:g})")
    for key in ("connect_timeout_s", "read_timeout_s"):
        if not getattr(cfg, key) <= budget:
            raise ConfigError(f"config: {key} ({getattr(cfg, key):g}) must be <= probe_budget_s ({budget:g})")
    interval = timedelta(minutes=cfg.interval_min)
    if budget > interval.total_seconds():
        raise ConfigError(
            f"config: probe_budget_s ({budget:g}) must be <= interval_min ({cfg.interval_min} min = "
            f"{interval.total_seconds():g} s): an attempt must end before the next round starts"
        )
    for step in cfg.ladder:
        if step < interval:
            raise ConfigError(
                f"config: ladder steps must be at least one round interval "
                f"(interval_min = {format_duration(interval)}) (got {format_duration(step)!r})"
            )
    return cfg


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
    elif explicit:
        raise ConfigError(f"config: file {p} not found")
    cfg = config_from_mapping(raw)
    overrides: dict[str, Any] = {}
    if env.get("OPENROUTER_BASE_URL"):
        overrides["base_url"] = validate_base_url(env["OPENROUTER_BASE_URL"], "OPENROUTER_BASE_URL")
    if env.get("CANARY_DB"):
        overrides["db_path"] = env["CANARY_DB"]
    return replace(cfg, **overrides)


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
