"""The watcher's look at one model: read the signals, record the suspicions, say which confirmation round to run.

    result = watch_model(cfg, model, now, listing)     # one short write window per model
    request = result.request                           # a ConfirmationRequest, or None

Per model, in one write window: earlier suspicions whose confirmation round has landed are resolved (what
the pinned probes said of the endpoint: tasks/core/suspicion.py `resolution`); then, once the model has a
complete full round (before it, a confirmation round would spend on what the first full round probes anyway:
`waiting` says so, nothing is suspected), the live counts of the window (attempts and judged answers), the
listing's figures and the rates the probes last cleared are read and `suspect` decides (pure). Each suspicion
is stored with its evidence, `scheduled` (a confirmation round will probe it) or `skipped` (over the budget:
the next full round decides, nothing changes). tasks/watch/loop.py looks at every model, starts the rounds and
announces the suspicions.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tasks.config import CanaryConfig
from tasks.core.confirm import ConfirmationRequest
from tasks.core.live_records import LiveCount
from tasks.core.suspicion import Suspicion, SuspicionStatus, confirmation_request, rules_of, suspect
from tasks.core.types import Endpoint, Mode

log = logging.getLogger("canary.watch")


@dataclass(frozen=True)
class WatchResult:
    model: str
    suspicions: tuple[Suspicion, ...] = ()
    request: ConfirmationRequest | None = None
    skipped: str | None = None  # why no confirmation round runs for the suspicions (the budget)
    resolved: int = 0
    listing: tuple[Endpoint, ...] = field(default=(), repr=False)
    waiting: str | None = None  # why nothing was suspected: the model has no complete full round yet


def fetch_listing(cfg: CanaryConfig, model: str) -> list[Endpoint]:
    """The model's endpoints with OpenRouter's current figures (one GET; the key only adds latency stats)."""
    import httpx

    from tasks.probe.discover import fetch_endpoints
    from tasks.runtime.secrets import read_secret

    key = read_secret("OPENROUTER_API_KEY")
    with httpx.Client(timeout=httpx.Timeout(cfg.read_timeout_s, connect=cfg.connect_timeout_s)) as client:
        return fetch_endpoints(client, cfg.base_url, key.get() if key else None, model)


def over_budget(cfg: CanaryConfig, now: datetime) -> str | None:
    """Why suspicions are not probed now: the projected spend exceeds `budget_usd_per_day` (None: they are).
    Read from the analysts' snapshot, like the round's budget step; no projection means no reduction."""
    if cfg.budget_usd_per_day <= 0:
        return None
    from tasks.round.footprint import projected_spend

    projection = projected_spend(cfg, now, "suspicions are probed")
    if projection is None:
        return None
    if projection.usd_per_day > cfg.budget_usd_per_day:
        return (f"over budget: projected ${projection.usd_per_day:.2f}/day > budget_usd_per_day "
                f"${cfg.budget_usd_per_day:.2f}; the next full round decides")
    return None


def watch_model(cfg: CanaryConfig, model: str, now: datetime, listing: Sequence[Endpoint],
                live_counts: Sequence[LiveCount] | None = None) -> WatchResult:
    """Resolve, suspect and record for one model in one write window (`listing`: its endpoints as OpenRouter
    lists them now; empty when the listing could not be read: the live signals still work on the tags of
    the model's latest full round). `live_counts`: the window's live counts read from Prometheus (`live_source =
    "prometheus"`, tasks/watch/live_prometheus.py); None reads them from the database's `live_requests`."""
    from tasks import store
    from tasks.ignore_list.publish import current_ignore_list
    from tasks.store import live

    rules = rules_of(cfg)
    # every look is a short write window; the analysts' snapshot is left to the next round (a copy every 30 s
    # of a large file would cost more than the look)
    with store.open_store(cfg.db_path, snapshot=False) as con:
        resolved = live.resolve_suspicions(con, now)
        full_round = live.last_round_endpoints(con, model)
        if not full_round:
            return WatchResult(model, resolved=resolved, listing=tuple(listing),
                               waiting=f"no complete full round of {model} yet: no suspicion-driven round "
                                       "before the first full round")
        mode = Mode(store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value)
        endpoints = list(listing) or full_round
        states = store.load_states(con, model, mode)
        ignore = current_ignore_list(con, cfg, model, [e.tag for e in endpoints] or None, now)
        counts = live.live_counts(con, model, now - timedelta(seconds=rules.window_s)) if live_counts is None \
            else live_counts
        found = suspect(model, counts, endpoints, states, ignore, live.last_suspected(con, model), rules, now,
                        live.cleared_rates(con, model))
        skipped = over_budget(cfg, now) if found else None
        status = SuspicionStatus.SKIPPED if skipped else SuspicionStatus.SCHEDULED
        live.record_suspicions(con, found, status, skipped)
    for s in found:
        log.warning("Suspicion %s %s: %s (%s)", model, s.tag, s.evidence, skipped or "confirmation round now")
    request = confirmation_request(model, found, [e.tag for e in endpoints], cfg.refusal_controls, now) \
        if found and not skipped else None
    return WatchResult(model, tuple(found), request, skipped, resolved, tuple(endpoints))


def note_round(cfg: CanaryConfig, found: Sequence[Suspicion], note: str) -> None:
    """Write how the confirmation round was started (a flow run id, or why it could not be) on the rows."""
    from tasks import store
    from tasks.store import live

    with store.open_store(cfg.db_path, snapshot=False) as con:
        live.mark_confirm_round(con, [s.suspicion_id for s in found], None, note)


def fail_suspicions(cfg: CanaryConfig, found: Sequence[Suspicion], note: str) -> None:
    """The round could not be started: the suspicions are `skipped` (nothing changes; the next full round
    decides), with why."""
    from tasks import store
    from tasks.store import live

    with store.open_store(cfg.db_path, snapshot=False) as con:
        live.set_suspicion_status(con, [s.suspicion_id for s in found], SuspicionStatus.SKIPPED, note)
