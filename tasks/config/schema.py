"""canary.toml's schema: every key's type, bounds and rule, and the rules between keys, as one pydantic model.

`CanaryFile` validates a TOML-shaped mapping (unknown keys refused); `CanaryFile.config()` builds the frozen
record the rest of the code reads (tasks/config/__init__.py `CanaryConfig`, which holds every default and its why: the
model's defaults are read from it). tasks/config/loading.py `config_from_mapping` turns the first error into
today's one line (`config: <key> <why>`, tasks/config/schema_lines.py).

Each key's rule: numbers are finite and within their bounds (`INT_BOUNDS`); paths are non-empty, and
`publish_dir` is no system or home directory; URLs follow the one base-URL rule (tasks/core/urls.py). Between
keys (`_relations`): `ttft_s < probe_budget_s`, the two timeouts `<= probe_budget_s` (unset, they default to the
smaller of their default and `probe_budget_s`), `probe_budget_s <= interval_min` minutes, `confirm_after_min <
interval_min` (unless 0), every ladder step at least one round interval.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator

from tasks.config import ALL_LANGUAGES, FILE_KEYS, NEVER_HARD, CanaryConfig
from tasks.config.schema_lines import Say
from tasks.core.plan import is_model_id
from tasks.core.redaction import strip_userinfo
from tasks.core.types import Contract, Mode
from tasks.core.urls import UrlFault, base_url, url_fault
from tasks.runtime.secrets import redact_known_secrets, register_url

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Longest duration accepted (about 27 years): beyond it timedelta arithmetic overflows.
_MAX_DAYS = 10_000
MAX_BUDGET_USD_PER_DAY = 1_000_000.0
#: Directories a publish_dir may never be: the canary writes its lists and a `.canary-db` marker there.
SYSTEM_DIRS = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc",
                         "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/mnt", "/media"})
D = CanaryConfig()  # every default's one home (tasks/config/__init__.py)


def duration(value: object) -> timedelta:
    """'1d', '36h', '90m', '30s', or a number of days; else a ValueError saying what a duration is."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if math.isfinite(value) and abs(value) <= _MAX_DAYS:
            return timedelta(days=float(value))
        raise ValueError(f"must be a finite duration like '1d' or '12h' (got {value!r})")
    if isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
        if seconds <= _MAX_DAYS * 86400:
            return timedelta(seconds=seconds)
        raise ValueError(f"must be a finite duration like '1d' or '12h' (got {value!r})")
    raise ValueError(f"must be a duration like '1d' or '12h' (got {value!r})")


def format_duration(td: timedelta) -> str:
    s = int(td.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s % size == 0 and s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def http_url(url: str) -> str:
    """A base URL (`base_url`, the alert links): http(s), no `user:password@` (the password is registered with
    the redactor first, so even this refusal cannot show it). Its fault is a ValueError's one-line why."""
    register_url(url)
    fault = url_fault(url, path_appended=False)
    if fault is UrlFault.NOT_HTTP:
        raise ValueError(f"must be an http(s) URL (got {redact_known_secrets(url)!r})")
    if fault is UrlFault.CREDENTIALS:
        raise ValueError(
            f"must not hold credentials (got {strip_userinfo(url)!r} with a user:password@ part): "
            "httpx would send them as Basic auth instead of the OpenRouter key; put the key in OPENROUTER_API_KEY")
    return base_url(url)


def _prometheus_url(url: str) -> str:
    """A path prefix is fine (a Prometheus behind `--web.route-prefix`); the watcher appends /api/v1/query."""
    register_url(url)
    if url_fault(url, path_appended=True):
        raise ValueError(f"must be an http(s) URL without credentials, query or fragment, to which /api/v1/query "
                         f"is appended (got {strip_userinfo(redact_known_secrets(url))!r})")
    return base_url(url)


def _link(url: str, trailing: str = "") -> str:
    """A link in Slack alerts ("" for none)."""
    return http_url(url.strip()) + trailing if url.strip() else ""


def _strings(value: Any) -> Any:
    """A list of non-empty strings (one string: a list of it)."""
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"must be a list of strings (got {value!r})")
    return value


def _path(value: str) -> str:
    if not value.strip():
        raise ValueError(f"must be a non-empty path (got {value!r})")
    return value


def _own_dir(value: str) -> str:
    """publish_dir may not be the file system's root, a top-level or system directory, or a home directory."""
    path = Path(value).expanduser()
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        resolved = path.absolute()
    home = Path.home()
    if str(resolved) in SYSTEM_DIRS or len(resolved.parts) <= 2 or resolved in (home, home.parent):
        raise ValueError(f"{value!r} is a system or home directory ({resolved}); the canary writes its ignore lists "
                         "and a .canary-db marker there: name a directory of its own")
    return value


def _model_ids(models: tuple[str, ...]) -> tuple[str, ...]:
    if not models:
        raise ValueError("must name at least one model")
    bad = next((m for m in models if not is_model_id(m)), None)
    if bad is not None:
        raise ValueError(f"entries must look like 'author/slug', without spaces or control characters (got {bad!r})")
    twice = next((m for i, m in enumerate(models) if m in models[:i]), None)
    if twice is not None:
        raise ValueError(f"lists {twice!r} twice (a model has one round per cycle)")
    return models


def _languages(langs: tuple[str, ...]) -> tuple[str, ...]:
    bad = [lang for lang in langs if lang not in ALL_LANGUAGES]
    if bad or not langs:
        raise ValueError(f"must be among {', '.join(ALL_LANGUAGES)} (got {bad[0] if bad else '[]'!r})")
    return langs


def _contract_list(value: Any) -> Any:
    """`--set hard_contracts=language,opening` gives a string (the default, None, gives no type)."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value or []


def _hard(names: tuple[str, ...]) -> tuple[str, ...]:
    """Contract names; `ttft` is never hard (slowness is often load: the next full round decides)."""
    known = {str(c) for c in Contract} - NEVER_HARD
    bad = next((n for n in names if n not in known), None)
    if bad is not None:
        raise ValueError(f"entries must be among {', '.join(sorted(known))} (got {bad!r})")
    return tuple(dict.fromkeys(names))


def _steps(value: Any) -> Any:
    if not isinstance(value, list | tuple) or not value:
        raise ValueError(f"must be a non-empty list of durations (got {value!r})")
    return value


Strings = Annotated[tuple[str, ...], BeforeValidator(_strings)]
PathKey = Annotated[str, Strict(), AfterValidator(_path), Say(what="a path")]
Url = Annotated[str, Strict(), AfterValidator(http_url), Say(what="a URL")]
Duration = Annotated[timedelta, BeforeValidator(duration)]
Seconds = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False),
                    Say("must be a finite number of seconds > 0 (got {number})", "a number of seconds")]
Dollars = Annotated[float, Strict(), Field(ge=0, le=MAX_BUDGET_USD_PER_DAY, allow_inf_nan=False),
                    Say("must be between 0 and {le:g}, 0 = no budget (got {number:g})", "a number of US dollars")]


#: An integer key; its bounds (`Field(ge=..., le=...)` on the key) refuse typos and runaway values (a
#: `concurrency` of 1e11 would open that many sockets): far above any real setup, far below any overflow.
Int = Annotated[int, Strict(), Say("must be between {ge} and {le} (got {value})", "an integer")]
#: A number from 0 to its `le`.
Share = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False),
                  Say("must be >= 0 and <= {le:g} (got {number:g})", "a number")]


class CanaryFile(BaseModel):
    """canary.toml: its keys in the order they are checked; defaults from `CanaryConfig`."""

    model_config = ConfigDict(extra="forbid")

    models: Annotated[Strings, AfterValidator(_model_ids)] = D.models
    mode: Annotated[Mode, Say("must be 'observe' or 'enforce' (got {value!r})")] = D.mode
    live_source: Annotated[Literal["db", "prometheus"],
                           Say('must be "db" or "prometheus" (got {value!r})')] = D.live_source  # type: ignore[assignment]
    prometheus_url: Annotated[str, Strict(), AfterValidator(_prometheus_url), Say(what="a URL")] = D.prometheus_url
    base_url: Url = D.base_url
    db_path: PathKey = D.db_path
    publish_dir: Annotated[PathKey, AfterValidator(_own_dir)] = D.publish_dir
    exclusions_file: PathKey = D.exclusions_file
    runbook_base_url: Annotated[str, Strict(), AfterValidator(lambda u: _link(u, "/")),
                                Say(what='an http(s) URL or ""')] = D.runbook_base_url
    grafana_url: Annotated[str, Strict(), AfterValidator(_link), Say(what='an http(s) URL or ""')] = D.grafana_url
    refusal_controls: Annotated[Strings, BeforeValidator(lambda v: v or [])] = D.refusal_controls
    languages: Annotated[Strings, AfterValidator(_languages)] = D.languages
    ttft_s: Seconds = D.ttft_s
    connect_timeout_s: Seconds = D.connect_timeout_s
    read_timeout_s: Seconds = D.read_timeout_s
    probe_budget_s: Seconds = D.probe_budget_s
    text_cap_bytes: Annotated[Int, Field(ge=256, le=16 * 1024 * 1024)] = D.text_cap_bytes
    concurrency: Annotated[Int, Field(ge=1, le=4096)] = D.concurrency
    models_in_flight: Annotated[Int, Field(ge=1, le=1024)] = D.models_in_flight
    fail_rounds: Annotated[Int, Field(ge=1, le=1000)] = D.fail_rounds
    restore_rounds: Annotated[Int, Field(ge=1, le=1000)] = D.restore_rounds
    min_hosts: Annotated[Int, Field(ge=0, le=1000)] = D.min_hosts
    interval_min: Annotated[Int, Field(ge=1, le=7 * 24 * 60)] = D.interval_min
    confirm_after_min: Annotated[Int, Field(ge=0, le=7 * 24 * 60)] = D.confirm_after_min
    suspect_confirm_after_s: Annotated[Int, Field(ge=10, le=24 * 3600)] = D.suspect_confirm_after_s
    suspect_window_s: Annotated[Int, Field(ge=60, le=7 * 24 * 3600)] = D.suspect_window_s
    suspect_min_requests: Annotated[Int, Field(ge=1, le=1_000_000)] = D.suspect_min_requests
    suspect_cooldown_s: Annotated[Int, Field(ge=0, le=7 * 24 * 3600)] = D.suspect_cooldown_s
    budget_usd_per_day: Dollars = D.budget_usd_per_day
    hard_contracts: Annotated[Strings, BeforeValidator(_contract_list), AfterValidator(_hard)] = (
        D.hard_contracts)  # type: ignore[assignment]  # None (the default): each contract's SPEC says
    suspect_failure_rate: Annotated[float, Strict(), Field(gt=0, le=1, allow_inf_nan=False),
                                    Say("must be > 0 and <= {le:g} (got {number:g})", "a number")] = (
        D.suspect_failure_rate)
    suspect_peer_margin: Annotated[Share, Field(le=1)] = D.suspect_peer_margin
    suspect_uptime_drop: Annotated[Share, Field(le=100)] = D.suspect_uptime_drop
    ladder: Annotated[tuple[Duration, ...], BeforeValidator(_steps)] = D.ladder
    ladder_decay: Annotated[Duration, Field(ge=timedelta(0)), Say("must be >= 0 (got {value!r})")] = D.ladder_decay

    @model_validator(mode="wrap")
    @classmethod
    def _between_keys(cls, raw: Any, handler: Any) -> CanaryFile:
        file: CanaryFile = handler(raw)
        for key in ("connect_timeout_s", "read_timeout_s"):  # unset timeouts follow a smaller budget
            if key not in file.model_fields_set:
                setattr(file, key, min(getattr(D, key), file.probe_budget_s))
        _relations(file, raw.get("ladder") if isinstance(raw, Mapping) else None)
        return file

    def config(self) -> CanaryConfig:
        return CanaryConfig(**{key: getattr(self, key) for key in FILE_KEYS})


def _relations(f: CanaryFile, given_ladder: Any) -> None:
    """The rules between keys, in this order (each message names the key to change and both values).
    `given_ladder`: the ladder as the file wrote it (a step is shown as written), None for the default."""
    fault = _confirm_fault(f) or _budget_fault(f) or _ladder_fault(f, given_ladder)
    if fault:
        raise ValueError(fault)


def _confirm_fault(f: CanaryFile) -> str | None:
    if f.confirm_after_min and not f.confirm_after_min < f.interval_min:
        return (f"confirm_after_min ({f.confirm_after_min}) must be < interval_min ({f.interval_min}): "
                "a confirmation comes before the next round (0 turns confirmation rounds off)")
    return None


def _budget_fault(f: CanaryFile) -> str | None:
    """An attempt's limits fit in its budget, and its budget in a round interval."""
    budget = f.probe_budget_s
    if not f.ttft_s < budget:
        return f"ttft_s ({f.ttft_s:g}) must be < probe_budget_s ({budget:g})"
    over = next((key for key in ("connect_timeout_s", "read_timeout_s") if not getattr(f, key) <= budget), None)
    if over:
        return f"{over} ({getattr(f, over):g}) must be <= probe_budget_s ({budget:g})"
    if budget > f.interval_min * 60:
        return (f"probe_budget_s ({budget:g}) must be <= interval_min ({f.interval_min} min = "
                f"{f.interval_min * 60:g} s): an attempt must end before the next round starts")
    return None


def _ladder_fault(f: CanaryFile, given_ladder: Any) -> str | None:
    """Every ladder step is at least one round interval."""
    interval = timedelta(minutes=f.interval_min)
    short = next((i for i, step in enumerate(f.ladder) if step < interval), None)
    if short is None:
        return None
    shown = given_ladder[short] if given_ladder is not None else format_duration(f.ladder[short])
    return (f"ladder steps must be at least one round interval (interval_min = {format_duration(interval)}) "
            f"(got {shown!r})")


def _int_bounds() -> dict[str, tuple[int, int]]:
    """Integer keys: (smallest, largest) accepted, read from the model."""
    bounds: dict[str, tuple[int, int]] = {}
    for name, f in CanaryFile.model_fields.items():
        if f.annotation is int:
            ge = next(m.ge for m in f.metadata if hasattr(m, "ge"))
            le = next(m.le for m in f.metadata if hasattr(m, "le"))
            bounds[name] = (ge, le)
    return bounds


INT_BOUNDS = _int_bounds()
