"""The watcher's loop: every model looked at every `watch_interval`, with no flow run per look.

    engine = WatchEngine(listing=fetch_listing, start_round=..., announce=emit_canary_events)
    looks = look_once(engine, cfg, now)                      # one look at every model (tests, the benchmark)
    run_watcher(engine, load_config, stop=threading.Event()) # `canary serve`'s thread, `canary watch`

A look that finds nothing leaves no trace: no flow run, no event, no log line (tasks/watch/look.py's short write
window is all). A suspicion is recorded there; then its confirmation round is started (`start_round`: served,
a Scheduled run of the cycle deployment, flows/watch.py; None in process: the caller runs the round from
`ModelLook.result.request`, as tasks/round/confirmations.py `run_confirmations` does) and each suspicion is
announced (`canary.endpoint.suspected`, tasks/core/canary_events.py).

The engine says only what differs between the served watcher and an in-process look, like the round's `Engine`
(tasks/round/engine.py): where the listing comes from, how a confirmation round is started, where the events
go.

Live counts: from the database's `live_requests` (`live_source = "db"`, read in each model's write window), or,
with `live_source = "prometheus"`, from the routers' counters in Prometheus, read once per look for every model
before any write window (`WatchEngine.live`, tasks/watch/live_prometheus.py).

Error policy, per look: Prometheus unreadable, or holding no router's counters -> OpenRouter's uptime alone, said
once while it lasts. Per model and look: the listing unreadable -> the live signals alone; the database busy or
broken, or any other error -> that model is not looked at this time (the next look tries again). Each is said
in one line when it begins (and when its words change), and once when it ends, never at every look
(tasks/runtime/quiet_log.py); so is waiting for the first database and for a model's first full round. A round that
cannot be started leaves its suspicions `skipped`, with why. The config is read again at every look (a broken
edit: one line, and the last good config goes on). The loop stops only when told (`stop`).

Schedule: a look every `watch_interval(cfg)` (a third of `suspect_confirm_after_s`, at least `MIN_INTERVAL_S`)
from the loop's start; a look that overran its interval is followed by the next at once.

Shards (docs/operations.md 2c): given `shards`, the watcher follows each database instead of the config's own:
at every tick it looks at the models each one holds (its own, not canary.toml's), and a suspicion's confirmation
round goes through that shard's engine (its cycle deployment, with its `db_path`), so it lands in its shard.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.config import CanaryConfig
from tasks.core.canary_events import CanaryEvent, suspicion_events
from tasks.core.confirm import ConfirmationRequest
from tasks.core.live_records import LiveCount
from tasks.core.suspicion import SuspicionStatus
from tasks.core.types import Endpoint
from tasks.errors import CanaryError
from tasks.runtime.clock import utcnow
from tasks.runtime.quiet_log import QuietLog
from tasks.watch.look import WatchResult, fail_suspicions, fetch_listing, note_round, watch_model

if TYPE_CHECKING:
    from tasks.watch.live_prometheus import LiveEvidence

log = logging.getLogger("canary.watch")

#: Shortest time between two looks, seconds: a look reads every model's listing (one GET each) and opens the
#: database for a short write window; more often than this would cost more than it could bring forward.
MIN_INTERVAL_S = 10.0

__all__ = ["MIN_INTERVAL_S", "ModelLook", "Shard", "WatchEngine", "look_once", "own_models_of", "run_watcher",
           "start_watcher", "watch_interval"]


def watch_interval(cfg: CanaryConfig) -> timedelta:
    """A third of `suspect_confirm_after_s`: a suspicion is seen, and its round started, well within it."""
    return timedelta(seconds=max(MIN_INTERVAL_S, cfg.suspect_confirm_after_s / 3))


def _no_events(events: Sequence[CanaryEvent]) -> int:
    return 0


def read_live(cfg: CanaryConfig, now: datetime) -> LiveEvidence:
    from tasks.watch.live_prometheus import read_live_evidence

    return read_live_evidence(cfg, now)


@dataclass(frozen=True)
class WatchEngine:
    """What one watcher looks and acts with."""

    #: The model's endpoints with OpenRouter's current figures (tasks/watch/look.py `fetch_listing`: one GET).
    listing: Callable[[CanaryConfig, str], Sequence[Endpoint]] = fetch_listing
    #: Start the confirmation round a look asks for; returns what started it (a flow run id). None: in process,
    #: the caller runs it (`ModelLook.result.request`).
    start_round: Callable[[CanaryConfig, ConfirmationRequest], str] | None = None
    #: Hand the suspicions' events on (tasks/orchestration/prefect_events.py `emit_canary_events`; nothing by default).
    announce: Callable[[Sequence[CanaryEvent]], object] = _no_events
    #: Every model's live counts from the routers' counters in Prometheus, for `live_source = "prometheus"`
    #: (tasks/watch/live_prometheus.py; a `LiveSourceError` when it cannot be read).
    live: Callable[[CanaryConfig, datetime], LiveEvidence] = read_live


@dataclass(frozen=True)
class Shard:
    """A database the watcher follows, and the engine its confirmation rounds start through."""

    db_path: str
    engine: WatchEngine


@dataclass(frozen=True)
class ModelLook:
    """What one look at one model did."""

    model: str
    result: WatchResult | None = None  # None: the model was not looked at (`error` says why)
    started: str | None = None  # what started its confirmation round (a flow run id)
    error: str | None = None

    @property
    def waiting(self) -> str | None:
        return self.result.waiting if self.result is not None else None

    def as_dict(self) -> dict[str, Any]:
        """The look as plain data: the suspicions, why no round runs, and the confirmation's parameters."""
        r = self.result
        out: dict[str, Any] = {
            "model": self.model,
            "suspicions": [{"tag": s.tag, "signal": str(s.signal), "quality": str(s.quality) if s.quality else None,
                            "evidence": s.evidence} for s in (r.suspicions if r else ())],
            "skipped": r.skipped if r else None, "resolved": r.resolved if r else 0, "confirmation": None,
            "waiting": self.waiting, "error": self.error,
        }
        if r is not None and r.request is not None:
            out["confirmation"] = {**r.request.parameters(), "due": r.request.due.isoformat()}
            if self.started:
                out["confirmation"]["flow_run_id"] = self.started
        return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def look_at(engine: WatchEngine, cfg: CanaryConfig, model: str, now: datetime, quiet: QuietLog,
            live_counts: Sequence[LiveCount] | None = None) -> ModelLook:
    """One look at one model, under the error policy (the module docstring); `live_counts`: from Prometheus
    (None: the database's)."""
    try:
        listing = list(engine.listing(cfg, model))
        quiet.end(f"listing {model}", f"watch: the listing of {model} answers again")
    except (CanaryError, OSError) as exc:  # the live signals work without it
        quiet.say(f"listing {model}", f"watch: no listing for {model} ({_first_line(exc)}); live traffic only")
        listing = []
    try:
        result = watch_model(cfg, model, now, listing, live_counts)
    except Exception as exc:  # a busy or broken database, or a bug: this model waits for the next look
        why = _first_line(exc) if isinstance(exc, CanaryError) else f"{type(exc).__name__}: {_first_line(exc)}"
        quiet.say(f"look {model}", f"watch: {model} not looked at: {why}; the next look tries again")
        return ModelLook(model, error=why)
    quiet.end(f"look {model}", f"watch: {model} is looked at again")
    if result.waiting:
        quiet.say(f"waiting {model}", f"watch: {result.waiting}", logging.INFO)
        return ModelLook(model, result)
    quiet.end(f"waiting {model}")
    started, confirmation = None, None
    status = SuspicionStatus.SKIPPED if result.skipped else SuspicionStatus.SCHEDULED
    if result.request is not None:
        confirmation = {"confirms": result.request.confirms}
        if engine.start_round is not None:
            started, status = _start(engine.start_round, cfg, result)
            if started:
                confirmation["flow_run_id"] = started
    if result.suspicions:
        engine.announce(suspicion_events(result.suspicions, str(status), confirmation))
    return ModelLook(model, result, started)


def _start(start_round: Callable[[CanaryConfig, ConfirmationRequest], str], cfg: CanaryConfig,
           result: WatchResult) -> tuple[str | None, SuspicionStatus]:
    """Start the confirmation round and write what started it on the suspicions (or, when it could not be
    started, mark them `skipped` with why: nothing changes, the next full round decides)."""
    assert result.request is not None
    try:
        started = start_round(cfg, result.request)
    except Exception as exc:
        why = f"could not start the round: {type(exc).__name__}: {_first_line(exc)}"
        log.warning("watch: %s for %s", why, result.request.confirms)
        try:
            fail_suspicions(cfg, result.suspicions, why)
        except CanaryError as store_exc:
            log.warning("watch: the suspicions of %s stay `scheduled`: %s", result.model, store_exc)
        return None, SuspicionStatus.SKIPPED
    try:
        note_round(cfg, result.suspicions, f"flow run {started}")
    except CanaryError as exc:  # the round runs; only its note on the rows is missing
        log.warning("watch: flow run %s started, not noted on the suspicions: %s", started, exc)
    return started, SuspicionStatus.SCHEDULED


def look_once(engine: WatchEngine, cfg: CanaryConfig, now: datetime, quiet: QuietLog | None = None
              ) -> list[ModelLook]:
    """One look at every configured model, in order."""
    quiet = quiet or QuietLog(log)
    live = _live_counts(engine, cfg, now, quiet)
    return [look_at(engine, cfg, model, now, quiet, None if live is None else live.get(model, ()))
            for model in cfg.models]


def _live_counts(engine: WatchEngine, cfg: CanaryConfig, now: datetime, quiet: QuietLog
                 ) -> Mapping[str, Sequence[LiveCount]] | None:
    """Every model's live counts from Prometheus (None: `live_source = "db"`, each look reads the database). A
    Prometheus that cannot be read, or holds no router's counters, is said once while it lasts: the look goes
    on with OpenRouter's uptime alone."""
    if cfg.live_source != "prometheus":
        return None
    try:
        evidence = engine.live(cfg, now)
    except CanaryError as exc:
        quiet.say("live source", f"watch: {_first_line(exc)}; no live suspicion until it answers (OpenRouter's "
                                 "uptime is still watched)")
        return {}
    if not evidence.routers:
        quiet.say("live source", f"watch: Prometheus at {cfg.prometheus_url} holds no router's live counters "
                                 "(canary_router_live_attempts_total): is it scraping the routers? no live "
                                 "suspicion until it does")
    else:
        quiet.end("live source", f"watch: Prometheus at {cfg.prometheus_url} answers: live counts of "
                                 f"{evidence.routers} router replica(s)")
    return evidence.counts


def run_watcher(engine: WatchEngine, load: Callable[[], CanaryConfig], *, stop: threading.Event,
                interval: timedelta | None = None, ticks: int | None = None,
                now: Callable[[], datetime] = utcnow, monotonic: Callable[[], float] = time.monotonic,
                quiet: QuietLog | None = None, shards: Sequence[Shard] = ()) -> int:
    """Look every `interval` (default `watch_interval` of the config read at each tick) until `stop` is set
    (or `ticks` ticks have passed); returns how many looks were made (one per database looked at). Never raises
    an Exception. `shards`: follow these databases, each with its own models and engine (module docstring)."""
    quiet = quiet or QuietLog(log)
    cfg: CanaryConfig | None = None
    looks = tick = 0
    next_at = monotonic()
    while not stop.is_set() and (ticks is None or tick < ticks):
        tick += 1
        try:
            cfg = _config(load, cfg, quiet)
            if cfg is not None:
                looks += sum(_tick(e, c, now(), quiet, own) for e, c, own in _followed(engine, cfg, shards))
        except Exception as exc:  # the loop outlives anything a look can raise; said once
            quiet.say("tick", f"watch: a look failed: {type(exc).__name__}: {_first_line(exc)}")
        every = (interval if interval is not None else watch_interval(cfg) if cfg is not None
                 else timedelta(seconds=MIN_INTERVAL_S)).total_seconds()
        next_at += every
        delay = next_at - monotonic()
        if delay < 0:  # the look overran its interval: the next one now, and the schedule from here
            next_at, delay = monotonic(), 0.0
        if ticks is not None and tick >= ticks:
            break
        stop.wait(delay)
    return looks


def _config(load: Callable[[], CanaryConfig], last: CanaryConfig | None, quiet: QuietLog) -> CanaryConfig | None:
    try:
        cfg = load()
    except CanaryError as exc:
        quiet.say("config", f"watch: {_first_line(exc)}; "
                            + ("looking with the config read before" if last else "not looking until it reads"))
        return last
    quiet.end("config", "watch: the config reads again")
    return cfg


def own_models_of(db_path: str) -> list[str]:
    """The models a shard's database holds (one short window; StoreError when it cannot be read now)."""
    from tasks import store
    from tasks.store.history import models_of

    with store.open_store(db_path, snapshot=False) as con:
        return models_of(con)


def _followed(engine: WatchEngine, cfg: CanaryConfig, shards: Sequence[Shard]
              ) -> list[tuple[WatchEngine, CanaryConfig, bool]]:
    """(engine, config, looks at the database's own models) for each database followed."""
    if not shards:
        return [(engine, cfg, False)]
    return [(s.engine, replace(cfg, db_path=s.db_path), True) for s in shards]


def _tick(engine: WatchEngine, cfg: CanaryConfig, now: datetime, quiet: QuietLog, own_models: bool = False) -> int:
    """One look unless the database is not there yet (a look would create it: the first round does); with
    `own_models`, at the models the database holds (a shard's), once it holds any."""
    db = cfg.db_path
    if not Path(db).exists():
        quiet.say(f"database {db}", f"watch: waiting for the first database at {db} (the first round "
                                    "creates it); no look until then", logging.INFO)
        return 0
    quiet.end(f"database {db}", f"watch: the database at {db} is there; looking every "
                                f"{watch_interval(cfg).total_seconds():g} s")
    if own_models:
        try:
            models = own_models_of(db)
        except CanaryError as exc:
            quiet.say(f"models {db}", f"watch: {db} not looked at: {_first_line(exc)}; the next look tries again")
            return 0
        quiet.end(f"models {db}", f"watch: {db} is looked at again")
        if not models:
            quiet.say(f"no models {db}", f"watch: {db} holds no round yet; no look until it does", logging.INFO)
            return 0
        quiet.end(f"no models {db}")
        cfg = replace(cfg, models=tuple(models))
    quiet.end("tick")
    look_once(engine, cfg, now, quiet)
    return 1


def start_watcher(engine: WatchEngine, load: Callable[[], CanaryConfig], *, name: str = "canary-watch",
                  **kw: Any) -> tuple[threading.Thread, threading.Event]:
    """`run_watcher` in a daemon thread (`canary serve`); set the returned event to stop it."""
    stop = threading.Event()
    thread = threading.Thread(target=run_watcher, args=(engine, load), kwargs={"stop": stop, **kw}, name=name,
                              daemon=True)
    thread.start()
    return thread, stop
