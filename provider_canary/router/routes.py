"""The routes file's records (provider_canary/router/ROUTES.md): which ordered tiers serve a key, and the router's
knobs.

Frozen records and every knob's default. provider_canary/router/routes_schema.py is the file's schema (types, bounds,
rules; its defaults are read from here); provider_canary/router/routes_loading.py reads and validates the file into them
(`parse_routes`, `load_routes`) and resolves the tiers' API keys from the environment (`resolve_api_keys`).
Secrets never live in the file itself: a route keyed by a client API key names the SHA-256 of that key,
never the key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

#: How long a tier may take, from sending the request, to produce its first content-bearing chunk.
#: Past it the tier is abandoned (nothing reached the client) and the next tier is tried. 5 s: half the
#: canary's ttft contract, so a healthy-but-slow primary is not skipped, a stalled one is.
DEFAULT_FIRST_CHUNK_BUDGET_S = 5.0
#: TCP connect budget per tier (inside the first-chunk budget when streaming).
DEFAULT_CONNECT_TIMEOUT_S = 5.0
#: After the commit, the longest silence tolerated between two upstream reads before the client's stream
#: is ended with an error event. Keep-alive comments reset it.
DEFAULT_IDLE_TIMEOUT_S = 30.0
#: Whole-response budget of one non-streaming upstream request.
DEFAULT_REQUEST_TIMEOUT_S = 120.0
#: Upper bound on any cooldown, in seconds: a Retry-After (a misbehaving upstream cannot lock a tier out for a
#: day; 0 = no Retry-After cooldown at all) and the circuit breaker's doubled open period (never below
#: `cooldown_s`). 300 s: Envoy's `max_ejection_time` default; a tier whose trials keep failing is tried again
#: every 5 minutes, while the canary's probes decide about its endpoint.
DEFAULT_MAX_COOLDOWN_S = 300.0
#: Circuit breaker (provider_canary/router/breaker.py): failures of a tier in a row (first-chunk timeout, 5xx,
#: transport, a masked
#: upstream failure, an error before or after the commit) that open its circuit; 0 turns the breaker off.
#: 3: LiteLLM's `allowed_fails` default; Envoy's `consecutive_5xx` is 5. Three in a row on one tier is no blip
#: at gateway traffic, and each one cost a client up to a whole first-chunk budget.
DEFAULT_ALLOWED_FAILS = 3
#: Seconds an open circuit skips its tier before one trial request may try it (doubled after each failed
#: trial, up to `max_cooldown_s`). 30 s: Envoy's `base_ejection_time` and LiteLLM's `cooldown_time` defaults.
DEFAULT_COOLDOWN_S = 30.0
#: Browser origins allowed to call the router (CORS: `OPTIONS` preflight answered, responses carry
#: `Access-Control-Allow-Origin`); empty: no CORS headers at all, `OPTIONS` answers 405. `["*"]` allows any.
DEFAULT_CORS_ORIGINS: tuple[str, ...] = ()
#: Where the canary publishes `<model-slug>.json` ignore lists (tasks/config/__init__.py DEFAULT_PUBLISH_DIR).
DEFAULT_PUBLISH_DIR = "published"
#: Route events (failovers, degraded marks), one JSON object per line.
DEFAULT_EVENTS_PATH = "route_events.jsonl"
#: Token-saving measurements (tokens before/after the savers, billed prompt tokens), one JSON per line.
DEFAULT_SAVINGS_PATH = "router_savings.jsonl"
#: Sinks are flushed in short windows (never hold DuckDB open between them).
DEFAULT_FLUSH_INTERVAL_S = 1.0
#: The savers pipeline, in order (provider_canary/router/savings.py SAVERS holds the names). Only savers that can prove
#: a change
#: keeps the meaning: `drop_duplicate_system` drops a system message that repeats an earlier one exactly.
#: `collapse_whitespace` is opt-in (whitespace in prose only, provider_canary/router/savings.py says how it tells).
DEFAULT_SAVERS: tuple[str, ...] = ("drop_duplicate_system",)
#: Prompt budget for `trim_old_turns` in tokens; 0 disables trimming even when the saver is listed.
DEFAULT_TOKEN_BUDGET = 0
#: Largest request body accepted, in bytes; a larger one is refused with 413 before it is read whole.
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
#: Judge every answer passed (provider_canary/router/answer.py): counted per endpoint and class in `live_requests`.
DEFAULT_JUDGE = True
#: Streamed answers waiting for the judging; past it new ones are dropped (and counted), never waited for.
DEFAULT_JUDGE_QUEUE = 256
#: Bytes of a streamed answer kept for the judging (the rest is forwarded, not kept: the answer is judged as cut).
DEFAULT_JUDGE_KEEP_BYTES = 256 * 1024
#: Refuse to start when a tier's canary ignore list is missing (false: start, and say so loudly).
DEFAULT_REQUIRE_IGNORE_LISTS = False
#: The canary's round interval (canary.toml `interval_s`): a list older than two of them is stale.
DEFAULT_CANARY_INTERVAL_S = 1800.0
#: Per route: a non-streamed answer that fails its tools or structured check is asked of the next tier.
DEFAULT_RETRY_FAILED_CHECKS = True
#: Without any `[[client]]` the router serves anyone who reaches it: it listens on loopback only unless this is true.
DEFAULT_ALLOW_ANONYMOUS = False
#: Connections the router keeps to all its upstreams together; a request that finds none free within
#: `connect_timeout_s` is answered 503 `router_overloaded` (the router's saturation, never an endpoint's fault).
DEFAULT_MAX_CONNECTIONS = 256
#: Seconds between two polls of `lists_url` (the canary's exporter, `GET /lists/<model-slug>.json`, conditional):
#: an exclusion the canary publishes reaches the router within this. Each poll is one small request per list
#: (a 304 when nothing changed).
DEFAULT_LISTS_POLL_S = 5.0

def key_id(api_key: str) -> str:
    """The id under which a client API key appears in events and logs: never the key itself."""
    return "key:" + hashlib.sha256(api_key.encode("utf-8")).hexdigest()[:12]


def tier_server(base_url: str) -> str:
    """A base URL's `host[:port]` as it names them, without credentials, path or query."""
    return urlsplit(base_url).netloc.rpartition("@")[2]


@dataclass(frozen=True)
class Tier:
    """One upstream of a route: an OpenRouter-compatible API, the model to ask, provider preferences."""

    base_url: str
    model: str
    api_key_env: str | None = None
    provider: Mapping[str, Any] = field(default_factory=dict, hash=False)
    canary_model: str | None = None  # whose published ignore list is merged (default: `model`)
    ignore_file: str | None = None  # explicit ignore-list JSON path (default: <publish_dir>/<slug>.json)
    first_chunk_budget_s: float | None = None  # this tier's budget (default: the route's, then the router's)

    # Derived once per tier (functools.cached_property writes the instance's __dict__, past the frozen __setattr__):
    # the walk, the breaker and the metrics ask for them on every request.
    @cached_property
    def upstream_id(self) -> str:
        """Cooldowns are per upstream identity, so two routes sharing an upstream share its Retry-After."""
        prefs = json.dumps(dict(self.provider), sort_keys=True, separators=(",", ":"))
        return f"{self.base_url}|{self.model}|{prefs}|{self.api_key_env or ''}"

    @cached_property
    def server(self) -> str:
        """The base URL's host[:port]: the `server` label of the router's metrics."""
        return tier_server(self.base_url)

    @cached_property
    def label(self) -> str:
        """`base_url model [order=a,b]`: what events show as `upstream` (no secret in it)."""
        order = self.provider.get("order") or self.provider.get("only")
        suffix = f" [{','.join(map(str, order))}]" if isinstance(order, list) and order else ""
        return f"{self.base_url} {self.model}{suffix}"


@dataclass(frozen=True)
class Client:
    """A caller of the router (`[[client]]`, or a route keyed by `api_key_sha256`): its name is what metrics,
    route events and logs show; the key itself is never stored, only its SHA-256."""

    name: str
    key_sha256: str  # 64 lower-case hex digits
    requests_per_minute: int = 0  # 0: no limit

    @property
    def digest(self) -> bytes:
        return bytes.fromhex(self.key_sha256)


@dataclass(frozen=True)
class Route:
    key: str  # "model:<name>" or "key:<sha256 prefix>": the id events carry
    tiers: tuple[Tier, ...]
    model: str | None = None
    api_key_sha256: str | None = None
    retry_failed_checks: bool = DEFAULT_RETRY_FAILED_CHECKS  # non-streamed answers failing tools/structured
    first_chunk_budget_s: float | None = None  # the route's budget (default: the router's)

    def first_chunk_budget(self, tier_no: int, default_s: float) -> float:
        """The first-chunk budget of tier `tier_no` (1-based): the tier's, else the route's, else `default_s`."""
        for budget in (self.tiers[tier_no - 1].first_chunk_budget_s, self.first_chunk_budget_s):
            if budget is not None:
                return budget
        return default_s


@dataclass(frozen=True)
class RouterSettings:
    publish_dir: str = DEFAULT_PUBLISH_DIR
    first_chunk_budget_s: float = DEFAULT_FIRST_CHUNK_BUDGET_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    max_cooldown_s: float = DEFAULT_MAX_COOLDOWN_S
    events_path: str = DEFAULT_EVENTS_PATH
    events_db: str | None = None
    savings_path: str = DEFAULT_SAVINGS_PATH
    flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S
    savers: tuple[str, ...] = DEFAULT_SAVERS
    token_budget: int = DEFAULT_TOKEN_BUDGET
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    judge: bool = DEFAULT_JUDGE
    judge_queue: int = DEFAULT_JUDGE_QUEUE
    judge_keep_bytes: int = DEFAULT_JUDGE_KEEP_BYTES
    require_ignore_lists: bool = DEFAULT_REQUIRE_IGNORE_LISTS
    canary_interval_s: float = DEFAULT_CANARY_INTERVAL_S
    allow_anonymous: bool = DEFAULT_ALLOW_ANONYMOUS
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # the canary's lists over HTTP (provider_canary/router/lists_poll.py); copies kept in publish_dir
    lists_url: str | None = None
    lists_poll_s: float = DEFAULT_LISTS_POLL_S
    allowed_fails: int = DEFAULT_ALLOWED_FAILS
    cooldown_s: float = DEFAULT_COOLDOWN_S
    cors_origins: tuple[str, ...] = DEFAULT_CORS_ORIGINS


@dataclass(frozen=True)
class Routes:
    settings: RouterSettings
    routes: tuple[Route, ...]
    clients: tuple[Client, ...] = ()  # `[[client]]`: with any, every /v1/* request needs one's key

    @property
    def callers(self) -> tuple[Client, ...]:
        """Every key the router accepts when it asks for one: the clients, then each route keyed by
        `api_key_sha256` whose digest no client holds (such a key is a client too, named by its route key)."""
        held = {c.key_sha256 for c in self.clients}
        by_route = tuple(Client(r.key, r.api_key_sha256) for r in self.routes
                         if r.api_key_sha256 is not None and r.api_key_sha256 not in held)
        return self.clients + by_route

    def find(self, model: str | None, api_key: str | None) -> Route | None:
        """A route for the client's API key wins over one for the requested model name."""
        if api_key:
            digest = hashlib.sha256(api_key.encode("utf-8")).hexdigest()
            for route in self.routes:
                if route.api_key_sha256 == digest:
                    return route
        for route in self.routes:
            if model is not None and route.model == model:
                return route
        return None

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(r.model for r in self.routes if r.model is not None)
