"""The router's state, built once at start-up: the routes, the tier keys, the sinks, the books and the judging.

`build_shell` is the router's composition root: it resolves the tier keys from the environment (RoutesError when
one is missing), reads the canary's lists, opens the sinks the routes file names and hangs every observer of a
tier attempt (route events, metrics, live counts, cooldowns, circuits: provider_canary/router/attempts.py) on one
`AttemptObserver`. The request handler (provider_canary/router/chat.py), the walk (provider_canary/router/walk.py) and
the status endpoints (provider_canary/router/status.py) read and write this one `RouterShell`; the app
(provider_canary/router/app.py) opens its upstream client.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from provider_canary.router import access, records
from provider_canary.router import ignore as ignore_lists
from provider_canary.router import tiers as tier_rules
from provider_canary.router.attempts import AttemptObserver, CooldownBook, RouteEventLog
from provider_canary.router.breaker import Policy
from provider_canary.router.circuits import CircuitBook
from provider_canary.router.ignore import IgnoreLists
from provider_canary.router.judging import AnswerJudging
from provider_canary.router.lists_poll import ListsPoller, attach, start_poller
from provider_canary.router.live import LiveRecorder, live_batchers
from provider_canary.router.masking import RelayMask
from provider_canary.router.metrics import RouterMetrics
from provider_canary.router.route_events import Batcher, JsonlSink, route_event_batchers
from provider_canary.router.routes import Route, Routes
from provider_canary.router.routes_loading import resolve_api_keys
from provider_canary.router.savings import PipelineResult, Savings
from tasks.core.types import RouteEvent
from tasks.runtime.clock import Clock, SystemClock
from tasks.runtime.secrets import SecretStr, install_redaction

log = logging.getLogger("router")


@dataclass
class RouterShell:
    routes: Routes
    api_keys: dict[str, SecretStr]
    clock: Clock
    ignore: IgnoreLists
    events: list[Batcher[RouteEvent]]
    savings: Batcher[dict[str, Any]] | None
    metrics: RouterMetrics
    live: LiveRecorder
    cooldown_book: CooldownBook
    observer: AttemptObserver
    judging: AnswerJudging
    circuits: CircuitBook
    mask: RelayMask
    client: httpx.AsyncClient | None = None  # opened and closed by the app's lifespan (provider_canary/router/app.py)
    # `lists_url`: the canary's lists over HTTP (provider_canary/router/lists_poll.py)
    lists_poll: ListsPoller | None = None

    @property
    def batchers(self) -> list[Batcher[Any]]:
        return [*self.events, *([self.savings] if self.savings else []), *self.live.batchers]

    @property
    def cooldowns(self) -> tier_rules.Cooldowns:
        return self.cooldown_book.cooldowns

    def pending_on_disk(self) -> int:
        return sum(b.spill.pending for b in self.batchers if b.spill is not None)

    def record_savings(
        self, route: Route, tier_no: int, pipeline: PipelineResult, savings: Savings, billed: int | None, stream: bool
    ) -> None:
        record = records.savings_record(self.clock.now(), route, tier_no, pipeline, savings, billed, stream)
        log.debug("savings %s tier %d: %d of %d prompt tokens saved (%s)", route.key, tier_no, savings.tokens_saved,
                  savings.tokens_before, ", ".join(pipeline.applied) or "no saver")  # per request: DEBUG only
        if self.savings is not None:
            self.savings.add([record])


def build_shell(
    routes: Routes,
    *,
    env: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    events: list[Batcher[RouteEvent]] | None = None,
) -> RouterShell:
    """Resolve keys (RoutesError if one is missing), read the canary's lists (logged per route and tier;
    RoutesError when one is missing and `require_ignore_lists`), and open the sinks named by the routes file."""
    install_redaction()  # the router's composition root: its logs and events are redacted from here on
    settings = routes.settings
    clock = clock or SystemClock()
    api_keys = resolve_api_keys(routes, os.environ if env is None else env)
    ignore = IgnoreLists(settings.publish_dir)
    poller = start_poller(routes)  # with lists_url: the first pass, before the lists are reported
    ignore_lists.report(ignore.statuses(routes), settings.require_ignore_lists, settings.canary_interval_s)
    access.report(routes)
    events = route_event_batchers(settings.events_path, settings.events_db) if events is None else events
    live = LiveRecorder(clock, live_batchers(settings.events_db))
    savings = Batcher(JsonlSink(settings.savings_path), "router-savings") if settings.savings_path else None
    every: list[Batcher[Any]] = [*events, *live.batchers, *([savings] if savings else [])]
    policy = Policy(settings.allowed_fails, settings.cooldown_s, settings.max_cooldown_s, settings.request_timeout_s)
    circuits = CircuitBook(clock, policy, events)
    metrics = RouterMetrics(lambda: ignore.reads, lambda: ignore.statuses(routes),
                            lambda: sum(b.spill.pending for b in every if b.spill is not None),
                            lambda: circuits.open_tiers(routes))
    cooldowns = CooldownBook(clock, settings.max_cooldown_s)
    metrics.live.prime(routes, settings.judge)
    attach(poller, metrics.lists_polls)
    observer = AttemptObserver([RouteEventLog(clock, events), metrics, metrics.live, live, cooldowns, circuits])
    return RouterShell(
        routes=routes, api_keys=api_keys, clock=clock, ignore=ignore, events=events, savings=savings,
        metrics=metrics, live=live, cooldown_book=cooldowns, observer=observer,
        judging=AnswerJudging(observer, metrics, settings.judge_queue), lists_poll=poller, circuits=circuits,
        mask=RelayMask(key.get() for key in api_keys.values()),
    )
