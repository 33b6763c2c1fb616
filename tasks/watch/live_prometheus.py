"""The watcher's live evidence from Prometheus (`live_source = "prometheus"`): the routers' counters, summed over
every replica, as the records the database path reads (the PromQL and the records: tasks/core/live_promql.py).

    evidence = read_live_evidence(cfg, now)        # one look: 4 instant queries for every configured model
    evidence.counts["acme/model"]                  # its LiveCount records over suspect_window_s
    health = live_source_health(cfg)               # `canary status`, `canary metrics`: answers? how many routers?

A Prometheus that does not answer, or answers an error, is a `LiveSourceError` (one line naming the URL and
what went wrong), never an empty answer: the watcher says it (tasks/watch/loop.py), and so do `canary status`
and `canary metrics` (`canary_live_source_up`). One that answers but holds no router's counters is said too
(`routers == 0`): it is not scraping the routers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx

from tasks.config import CanaryConfig
from tasks.core.live_promql import ROUTERS, PromError, Sample, live_counts, live_queries, parse_vector, routers_of
from tasks.core.live_records import LiveCount
from tasks.errors import CanaryError

#: Seconds one query may take (connect included): a look must not hang on a Prometheus that does not answer.
QUERY_TIMEOUT_S = 10.0


class LiveSourceError(CanaryError):
    def __init__(self, url: str, why: str) -> None:
        super().__init__(f"Prometheus at {url} {why}")
        self.why = why


@dataclass(frozen=True)
class LiveEvidence:
    counts: Mapping[str, Sequence[LiveCount]]  # per configured model
    routers: int  # replicas whose counters Prometheus holds


@dataclass(frozen=True)
class LiveSourceHealth:
    url: str
    up: bool  # answers, and holds at least one router's counters
    routers: int = 0
    error: str | None = None

    def line(self) -> str:
        """The `canary status` line."""
        where = f"live evidence: Prometheus at {self.url}"
        if self.error is not None:
            return f"live evidence: FAILING: Prometheus at {self.url} {self.error}; no live suspicion until it answers"
        if not self.routers:
            return (f"{where} holds no router's counters (canary_router_live_attempts_total): is it scraping the "
                    "routers? no live suspicion until it does")
        return f"{where}: {self.routers} router replica{'s' if self.routers != 1 else ''} reporting"


def query(client: httpx.Client, url: str, promql: str, at: datetime | None = None) -> list[Sample]:
    """One instant query (a POST form: a long model filter fits); LiveSourceError when it cannot be answered."""
    form = {"query": promql, **({"time": f"{at.timestamp():.3f}"} if at is not None else {})}
    try:
        response = client.post(f"{url}/api/v1/query", data=form)
    except httpx.HTTPError as exc:
        raise LiveSourceError(url, f"does not answer ({type(exc).__name__})") from None
    try:
        return parse_vector(response.content)
    except PromError as exc:
        raise LiveSourceError(url, f"answered HTTP {response.status_code}: {exc}") from None


def _client(**kw: Any) -> httpx.Client:
    return httpx.Client(timeout=QUERY_TIMEOUT_S, trust_env=False, **kw)


def read_live_evidence(cfg: CanaryConfig, now: datetime, client: httpx.Client | None = None) -> LiveEvidence:
    """Every configured model's live counts over the `suspect_window_s` before `now`, read at `now`."""
    url = cfg.prometheus_url
    with _client() if client is None else contextlib.nullcontext(client) as c:
        found = {family: query(c, url, promql, now)
                 for family, promql in live_queries(cfg.suspect_window_s, cfg.models).items()}
        routers = routers_of(query(c, url, ROUTERS, now))
    start = now - timedelta(seconds=cfg.suspect_window_s)
    return LiveEvidence({m: live_counts(m, found, start) for m in cfg.models}, routers)


def live_source_health(cfg: CanaryConfig) -> LiveSourceHealth:
    """Whether the configured Prometheus answers, and how many router replicas it holds counters of."""
    url = cfg.prometheus_url
    try:
        with _client() as c:
            routers = routers_of(query(c, url, ROUTERS))
    except LiveSourceError as exc:
        return LiveSourceHealth(url, False, error=exc.why)
    return LiveSourceHealth(url, routers > 0, routers)


class HealthCache:
    """The exporter's view of the live source: `refresh()` asks (the exporter's refresh thread, every few
    seconds), `last` is what a scrape shows, so a scrape never waits on Prometheus (thread-safe)."""

    def __init__(self, cfg: CanaryConfig) -> None:
        self.cfg = cfg
        self._lock = threading.Lock()
        self._last: LiveSourceHealth | None = None

    @property
    def last(self) -> LiveSourceHealth | None:
        with self._lock:
            return self._last

    def refresh(self) -> LiveSourceHealth:
        health = live_source_health(self.cfg)
        with self._lock:
            self._last = health
        return health
