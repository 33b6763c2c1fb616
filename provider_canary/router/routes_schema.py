"""The routes file's schema (provider_canary/router/ROUTES.md): every table's keys, types, bounds and rules, as pydantic
models.

`RoutesFile` validates a TOML-shaped mapping (unknown keys refused in every table); `RoutesFile.routes()` builds
the frozen records of provider_canary/router/routes.py (which hold every knob's default and its why: the models'
defaults are read from them). provider_canary/router/routes_loading.py turns the first error into today's one line
(`routes: <where> <why>`, tasks/config/schema_lines.py) and resolves the paths. URLs follow the one base-URL rule
(tasks/core/urls.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationInfo,
    model_validator,
)

from provider_canary.router.routes import DEFAULT_RETRY_FAILED_CHECKS, Client, Route, RouterSettings, Routes, Tier
from tasks.config.schema_lines import Say
from tasks.core.redaction import strip_userinfo
from tasks.core.urls import UrlFault, base_url, url_fault, without_query
from tasks.core.wire.provider_keys import PROVIDER_KEYS as WIRE_PROVIDER_KEYS
from tasks.runtime.secrets import redact_known_secrets, register_url

#: Keys OpenRouter accepts in `provider` (ProviderPreferences has additionalProperties: false).
PROVIDER_KEYS = frozenset(WIRE_PROVIDER_KEYS)
#: Control characters (CR and LF among them): a route name is sent back in a response header.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: An origin as a browser sends it: scheme://host[:port], no path (or "*": any).
_ORIGIN = re.compile(r"^https?://[^/\s?#]+$")
S = RouterSettings()  # every knob's default (provider_canary/router/routes.py)
_TABLE = ConfigDict(extra="forbid")


def _tier_url(raw: Any) -> str:
    """An http(s) URL without credentials (the password never shown): httpx would send `user:password@` as Basic
    auth in place of the tier's key, and the label carrying the URL would put it into /metrics; without a query or
    fragment: the router appends /chat/completions to it, and a key there would land in events and logs."""
    if isinstance(raw, str):
        register_url(raw)
    fault = url_fault(raw, path_appended=True)
    if fault is UrlFault.NOT_HTTP:
        shown = redact_known_secrets(without_query(raw)) if isinstance(raw, str) else raw
        raise ValueError(f"must be an http(s) URL (got {shown!r})")
    if fault is UrlFault.CREDENTIALS:
        raise ValueError(
            f"must not hold credentials (got {strip_userinfo(raw)!r} with a user:password@ part): httpx would send "
            "them as Basic auth instead of the tier's key; name the key's variable in api_key_env")
    if fault is UrlFault.QUERY:
        raise ValueError(
            f"must not hold a query or fragment (got {without_query(raw)!r} followed by one, not shown): the router "
            "appends /chat/completions to it, and a key there would land in route events, metrics and logs; name "
            "the key's variable in api_key_env")
    return base_url(raw)


def _lists_url(raw: Any) -> str | None:
    """`router.lists_url`: where a router on another host fetches the canary's lists
    (provider_canary/router/lists_poll.py)."""
    if raw == "" or raw is None:
        return None
    if url_fault(raw, path_appended=True):
        shown = strip_userinfo(raw) if isinstance(raw, str) else raw
        raise ValueError(f"must be an http(s) URL without credentials, query or fragment, to which "
                         f"/<model-slug>.json is appended (got {shown!r})")
    return base_url(raw)


def _events_db(raw: Any) -> str | None:
    if not isinstance(raw, str):
        raise ValueError(f'must be a path or "" (got {raw!r})')
    return raw or None


def _saver_list(raw: Any) -> Any:
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise ValueError(f"must be a list of saver names (got {raw!r})")
    return raw


def _known_savers(savers: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
    known = (info.context or {}).get("savers")
    bad = [s for s in savers if known is not None and s not in known]
    if bad:
        raise ValueError(f": unknown saver {bad[0]!r} (known: {', '.join(sorted(known or ()))})")
    return savers


def _origins(raw: Any) -> Any:
    if not isinstance(raw, list) or not all(isinstance(o, str) and (o == "*" or _ORIGIN.match(o)) for o in raw):
        raise ValueError(f'must be a list of origins such as "https://app.example.com" (scheme and host, no path) or '
                         f'["*"] (got {raw!r})')
    return tuple(o.rstrip("/") for o in raw)


def _provider(provider: dict[str, Any]) -> dict[str, Any]:
    bad = sorted(set(provider) - PROVIDER_KEYS)
    if bad:
        raise ValueError(f": unknown key {bad[0]!r} (OpenRouter rejects it)")
    ignore = provider.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(t, str) for t in ignore):
        raise ValueError(f".ignore must be a list of provider tags (got {ignore!r})")
    return json.loads(json.dumps(provider))  # plain, detached copy of the TOML table


def _route_name(model: str | None) -> str | None:
    if model is not None and not model.strip():
        raise ValueError(f"must be a model name (got {model!r})")
    if model is not None and _CONTROL.search(model):
        raise ValueError(f"must not hold control characters such as CR or LF (got {model!r}): it is sent back in "
                         "the x-canary-route header")
    return model


Seconds = Annotated[float, Strict(), Say("must be a number >= {ge:g} (got {value!r})")]
Budget = Annotated[Annotated[float, Strict(), Field(ge=0.001)] | None, Say("must be a number >= 0.001 (got {value!r})")]
Int = Annotated[int, Strict(), Say("must be an integer between {ge} and {le} (got {value!r})")]
Flag = Annotated[bool, Strict(), Say("must be true or false (got {value!r})")]
PathStr = Annotated[str, Strict(), Field(min_length=1), Say("must be a path (got {value!r})")]
Text = Annotated[Annotated[str, Strict()] | None, Say(what="a string")]
Sha256 = Annotated[str, Strict(), Field(pattern=r"^[0-9a-f]{64}$")]


class RouterTable(BaseModel):
    """`[router]`: the router's knobs."""

    model_config = _TABLE
    publish_dir: PathStr = S.publish_dir
    first_chunk_budget_s: Annotated[Seconds, Field(ge=0.001)] = S.first_chunk_budget_s
    connect_timeout_s: Annotated[Seconds, Field(ge=0.001)] = S.connect_timeout_s
    idle_timeout_s: Annotated[Seconds, Field(ge=0.001)] = S.idle_timeout_s
    request_timeout_s: Annotated[Seconds, Field(ge=0.001)] = S.request_timeout_s
    max_cooldown_s: Annotated[Seconds, Field(ge=0)] = S.max_cooldown_s
    events_path: PathStr = S.events_path
    events_db: Annotated[str | None, BeforeValidator(_events_db)] = S.events_db
    savings_path: PathStr = S.savings_path
    flush_interval_s: Annotated[Seconds, Field(ge=0.001)] = S.flush_interval_s
    savers: Annotated[tuple[str, ...], BeforeValidator(_saver_list), AfterValidator(_known_savers)] = S.savers
    token_budget: Annotated[Int, Field(ge=0, le=1 << 40)] = S.token_budget
    max_body_bytes: Annotated[Int, Field(ge=1024, le=1 << 34)] = S.max_body_bytes
    judge: Flag = S.judge
    judge_queue: Annotated[Int, Field(ge=1, le=1 << 20)] = S.judge_queue
    judge_keep_bytes: Annotated[Int, Field(ge=1024, le=1 << 30)] = S.judge_keep_bytes
    require_ignore_lists: Flag = S.require_ignore_lists
    canary_interval_s: Annotated[Seconds, Field(ge=0.001)] = S.canary_interval_s
    allow_anonymous: Flag = S.allow_anonymous
    max_connections: Annotated[Int, Field(ge=1, le=65536)] = S.max_connections
    lists_url: Annotated[str | None, BeforeValidator(_lists_url)] = S.lists_url
    lists_poll_s: Annotated[Seconds, Field(ge=0.1)] = S.lists_poll_s
    allowed_fails: Annotated[Int, Field(ge=0, le=1 << 20)] = S.allowed_fails
    cooldown_s: Annotated[Seconds, Field(ge=0.001)] = S.cooldown_s
    cors_origins: Annotated[tuple[str, ...], BeforeValidator(_origins)] = S.cors_origins

    def settings(self) -> RouterSettings:
        return RouterSettings(**{k: getattr(self, k) for k in RouterTable.model_fields})


class TierTable(BaseModel):
    """`[[route.tier]]`: one upstream of a route."""

    model_config = _TABLE
    base_url: Annotated[str, BeforeValidator(_tier_url)] = Field(default=None, validate_default=True)
    model: Annotated[str, Strict(), Field(pattern=r"\S"), Say("must be a model id (got {value!r})")]
    api_key_env: Annotated[Annotated[str, Strict(), Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None,
                           Say("must be an environment variable name (got {value!r})")] = None
    provider: Annotated[dict[str, Any], AfterValidator(_provider), Say(what="a table")] = Field(default_factory=dict)
    canary_model: Text = None  # whose published ignore list is merged (default: `model`)
    ignore_file: Text = None  # explicit ignore-list JSON path (default: <publish_dir>/<slug>.json)
    first_chunk_budget_s: Budget = None  # this tier's budget (default: the route's, then the router's)

    def tier(self) -> Tier:
        return Tier(**{k: getattr(self, k) for k in TierTable.model_fields})


class RouteTable(BaseModel):
    """`[[route]]`: ordered tiers for a model name or for a client key's digest."""

    model_config = _TABLE
    model: Annotated[Annotated[str, Strict()] | None, AfterValidator(_route_name),
                     Say("must be a model name (got {value!r})")] = None
    api_key_sha256: Annotated[Sha256 | None, Say("must be 64 lower-case hex digits (sha256 of the client key)")] = None
    tier: list[TierTable]
    retry_failed_checks: Flag = DEFAULT_RETRY_FAILED_CHECKS
    first_chunk_budget_s: Budget = None

    @model_validator(mode="before")
    @classmethod
    def _one_key_and_tiers(cls, raw: Any) -> Any:
        if not isinstance(raw, Mapping) or set(raw) - set(cls.model_fields):
            return raw  # not a table, or an unknown key: told as such
        if (raw.get("model") is None) == (raw.get("api_key_sha256") is None):
            raise ValueError("needs exactly one of model or api_key_sha256")
        if not isinstance(raw.get("tier"), list) or not raw["tier"]:
            raise ValueError("needs at least one [[route.tier]]")
        return raw

    def route(self) -> Route:
        key = f"model:{self.model}" if self.model is not None else f"key:{(self.api_key_sha256 or '')[:12]}"
        return Route(key=key, tiers=tuple(t.tier() for t in self.tier), model=self.model,
                     api_key_sha256=self.api_key_sha256, retry_failed_checks=self.retry_failed_checks,
                     first_chunk_budget_s=self.first_chunk_budget_s)


class ClientTable(BaseModel):
    """`[[client]]`: a caller of the router, named; its key only as a SHA-256."""

    model_config = _TABLE
    name: Annotated[str, Strict(), Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"),
                    Say("must be 1-64 letters, digits, '.', '_' or '-' (got {value!r}): it is a metric label and "
                        "appears in logs")]
    key_sha256: Annotated[Sha256, Say('must be 64 lower-case hex digits (printf %s "$KEY" | sha256sum; '
                                      "`canary router keys add NAME` prints one)")]
    requests_per_minute: Annotated[int, Strict(), Field(ge=0, le=1_000_000),
                                   Say("must be an integer between {ge} and {le} (got {value!r}; 0 = no limit)")] = 0

    def client(self) -> Client:
        return Client(self.name, self.key_sha256, self.requests_per_minute)


def _twin(values: list[str]) -> str | None:
    """The first value that is there twice."""
    return next((v for v in values if values.count(v) > 1), None)


class RoutesFile(BaseModel):
    """The whole file: `[router]`, `[[route]]` (at least one), `[[client]]`."""

    model_config = _TABLE
    router: RouterTable = RouterTable()
    route: list[RouteTable]
    client: list[ClientTable] = []

    @model_validator(mode="before")
    @classmethod
    def _routes_and_clients(cls, raw: Any) -> Any:
        if not isinstance(raw, Mapping) or set(raw) - set(cls.model_fields):
            return raw  # an unknown key: told as such
        if not isinstance(raw.get("route"), list) or not raw["route"]:
            raise ValueError("the file needs at least one [[route]]")
        if raw.get("client") is not None and not isinstance(raw["client"], list):
            raise ValueError(f"client must be an array of tables ([[client]]), got {raw['client']!r}")
        return raw

    @model_validator(mode="after")
    def _no_twins(self) -> RoutesFile:
        keys = [r.route().key for r in self.route]
        twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
        if twice is not None:
            raise ValueError(f"two routes share the key {twice!r}")
        names = [c.name for c in self.client]
        if (name := _twin(names)) is not None:
            raise ValueError(f"two clients share the name {name}: each client needs its own")
        if _twin([c.key_sha256 for c in self.client]) is not None:
            raise ValueError("two clients share the key (a digest): each client needs its own")
        return self

    def routes(self) -> Routes:
        return Routes(settings=self.router.settings(), routes=tuple(r.route() for r in self.route),
                      clients=tuple(c.client() for c in self.client))
