"""The `canary-cycle` flow: every configured model's round at one schedule tick, concurrently, in one process.

    canary-cycle ──> canary-round-<model>-<stamp> (the model's round: a named subflow run in the UI, its steps and
                     probes plain calls inside it; `models_in_flight` probing at once, a round at its tail
                     stepping aside for the next: tasks/orchestration/admission.py)

One process holds one language detector (built on first use) and one bounded pool of probe requests
(`concurrency`, sent by one probe worker process on one event loop: tasks/probe/worker.py) shared by every model in
flight; the policy stays sequential per model (each model's round settles and saves on its own). What the rounds
would each ask Prefect and the store for, the cycle does once: the rounds' slots (one acquisition under one lease,
tasks/orchestration/round_slots.py `cycle_round_slots`), the Secret blocks, the operational Variable's sync, and one
DuckDB connection kept open between the rounds' write windows (tasks/store/connection.py `kept_open`: it lets go of the
file whenever another process asks for it, and when the cycle is idle). Every `PROGRESS_EVERY_S` the cycle logs
one line: rounds done, in flight, requests in flight and an ETA.

Two cycles of one database never overlap: a file lock beside the database (`<db>.cycle.lock`,
tasks/orchestration/cycle_lock.py: it holds between `canary run`s that each started a private Prefect server), then a
Prefect global concurrency limit of one slot per DuckDB file (`cycle_limit_name`: it holds across the workers of one
server). A cycle that had to wait for the previous one, or that starts late, says so in its log and its result
(`late_s`), it is never silently skipped; one that waited `CYCLE_WAIT_S` in vain returns `status: late` with the reason
(and `canary run` exits 1). The rounds' time (`round_ts`, the round ids) is read once the lock and the slot are held, so
two cycles that waited for each other never share it; a cycle passes its flow run id to its rounds (`run_id`), and a
round's save refuses a round id another run holds (tasks/store/settlement.py `claim_round_id`). A cycle that died
holding the lock is healed by the next one at once: the leases of its slot and of its rounds' slots released
(tasks/orchestration/round_slots.py); its flow runs are marked Crashed by Prefect's zombie-run automation when their
heartbeats stop (tasks/orchestration/zombie_runs.py). `canary run` runs one cycle; `canary serve` and the work-pool
deployment schedule one every `interval_min`.

Shards (docs/operations.md "Past one machine"): one deployment per shard, each with its own `models` and
`db_path` parameters. A shard's cycles hold the slot of its own file (`canary-cycle-<db stem>`), so shards run
at the same time on workers of one pool; the default file `canary.duckdb` keeps the slot `canary-cycle`.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from tasks.config import DEFAULT_DB_PATH, CanaryConfig
from tasks.core.plan import model_slug
from tasks.core.progress import progress_line
from tasks.core.types import RoundState
from tasks.orchestration.cycle_lock import CycleLock, CycleLockTimeout
from tasks.runtime.arenas import cap_arenas
from tasks.runtime.clock import utcnow
from tasks.runtime.secrets import install_redaction

#: The slot of the default database (`canary.duckdb`): one shard, the name every single-file setup uses.
CYCLE_LIMIT = "canary-cycle"
#: How long a cycle waits for the previous one before it gives up (and says so), seconds.
CYCLE_WAIT_S = 600.0
#: The name a confirmation run of the cycle deployment is scheduled under, and keeps when it runs.
CONFIRM_RUN_PREFIX = "canary-confirm-"
#: Seconds between the cycle's progress lines (env CANARY_PROGRESS_S; 0: none).
PROGRESS_EVERY_S = 5.0
#: A model's round whose run the Prefect API refused is run again after these waits (orchestrator blips only).
ROUND_RETRY_DELAYS_S = (10.0, 30.0)


def _flow_run_name() -> str:
    """`canary-cycle-<time>`; a confirmation run keeps the `canary-confirm-<model>-<due>` name it was scheduled
    under (tasks/round/confirmations.py, flows/watch.py), else gets one (the UI tells the two kinds apart)."""
    from prefect.runtime import flow_run

    params = flow_run.parameters or {}
    ts = params.get("cycle_ts")
    stamp = (ts if isinstance(ts, datetime) else utcnow()).strftime("%Y-%m-%dT%H%M")
    if not params.get("confirms"):
        return f"canary-cycle-{stamp}"
    current = flow_run.name or ""
    return current if current.startswith(CONFIRM_RUN_PREFIX) else \
        f"{CONFIRM_RUN_PREFIX}{model_slug(str(params.get('model') or ''))}-{stamp}"


def cycle_limit_name(db_path: str) -> str:
    """The cycle slot of a database file: `canary-cycle` for `canary.duckdb` (wherever it lives), else
    `canary-cycle-<stem>` (`shard-b.duckdb` -> `canary-cycle-shard-b`), like the publish directory's name.
    One writer per file is what the slot protects, so shards with their own files never wait for each other;
    two files of one stem in different directories share a slot (they wait, they never clash)."""
    stem = Path(db_path).expanduser().stem
    if stem == Path(DEFAULT_DB_PATH).stem:
        return CYCLE_LIMIT
    return f"{CYCLE_LIMIT}-{model_slug(stem) or 'db'}"


@flow(name="canary-cycle", flow_run_name=_flow_run_name)
def canary_cycle(
    models: list[str] | None = None,
    mode: str | None = None,
    config_path: str | None = None,
    base_url: str | None = None,
    db_path: str | None = None,
    cycle_ts: datetime | None = None,
    overrides: dict[str, Any] | None = None,
    model: str | None = None,
    only: list[str] | None = None,
    contracts: dict[str, list[str]] | None = None,
    confirms: str | None = None,
    refresh_snapshot: bool = True,
) -> dict[str, Any]:
    """Run every configured model's round (or `models`) concurrently; one summary per model.

    `model` with `only`/`contracts`/`confirms`: a confirmation round of that model
    (tasks/round/confirmations.py schedules such a run of this deployment `confirm_after_min` after a round
    with hard failures)."""
    install_redaction()  # the entry point of a deployment's process: hooks before any log
    cap_arenas()  # before the rounds' threads (a no-op when the `canary` command or the operator did it)
    from tasks.config.loading import resolve_config
    from tasks.orchestration.cycle_turn import cycle_turn
    from tasks.round.steps import refresh_snapshot as refresh_analysts_snapshot

    logger = get_run_logger()
    cfg = resolve_config(config_path, overrides, base_url=base_url, db_path=db_path)
    chosen = [model] if model else list(dict.fromkeys(models or cfg.models))  # a model once per cycle
    confirmation = {"only": only, "contracts": contracts, "confirms": confirms} if only else {}
    # each round assembles its config from the same parameters (tasks/config/loading.py `resolve_config`)
    config = {"mode": mode, "config_path": config_path, "base_url": base_url, "db_path": db_path,
              "overrides": overrides}
    scheduled = cycle_ts or utcnow()  # what the log says; the rounds' time is read once the locks are held
    slot = cycle_limit_name(cfg.db_path)
    try:
        with cycle_turn(cfg.db_path, slot, CYCLE_WAIT_S, scheduled, logger) as (lock, late_s):
            # The rounds' time, read now that no other cycle of the database runs: two cycles that waited for
            # each other never share it (their round ids differ; the save refuses one that would not)
            round_ts = cycle_ts or utcnow()
            t0 = time.monotonic()
            summaries = _rounds_of_cycle(chosen, cfg, config, confirmation, round_ts, lock, logger)
            refresh_analysts_snapshot(cfg)  # once per cycle, not once per write
            wall_s = time.monotonic() - t0
    except (TimeoutError, CycleLockTimeout) as exc:
        return _late(exc, scheduled, slot, logger)
    logger.info("Cycle of %d models in %.1f s (slot %s, %s): %s", len(chosen), wall_s, slot, cfg.db_path,
                ", ".join(f"{s['model']} {s.get('status')}" for s in summaries))
    return {"cycle_ts": round_ts.isoformat(), "status": "complete", "late_s": late_s, "wall_s": wall_s,
            "slot": slot, "db_path": cfg.db_path, "rounds": summaries}


def _rounds_of_cycle(chosen: list[str], cfg: CanaryConfig, config: dict[str, Any], confirmation: dict[str, Any],
                     round_ts: datetime, lock: CycleLock, logger: Any) -> list[dict[str, Any]]:
    """The chosen models' rounds, with what they share done once (`_once_per_cycle`); their summaries."""
    from tasks.round.probe_task import warm_up
    from tasks.round.steps import flow_run_id

    warm_up()  # one probe worker for every model
    with _once_per_cycle(chosen, cfg.db_path, round_ts, logger,
                         on_lease=lambda lease: lock.record(round_lease_id=lease)):
        return _run_models(chosen, {**config, "run_id": flow_run_id(), "in_cycle": True},
                           round_ts, cfg.models_in_flight, confirmation, logger)


def _late(exc: Exception, scheduled: datetime, slot: str, logger: Any) -> dict[str, Any]:
    """The cycle that waited `CYCLE_WAIT_S` in vain: not run, and its result says why."""
    reason = (str(exc) if isinstance(exc, CycleLockTimeout)
              else f"the previous cycle still held the slot {slot} after {CYCLE_WAIT_S:.0f} s")
    logger.error("Cycle %s not run: %s", scheduled, reason)
    return {"cycle_ts": scheduled.isoformat(), "status": "late", "late_s": CYCLE_WAIT_S, "slot": slot,
            "reason": reason, "rounds": []}


@contextlib.contextmanager
def _once_per_cycle(models: list[str], db_path: str, now: datetime, logger: Any,
                    on_lease: Callable[[str], None] | None = None) -> Iterator[None]:
    """What each round would ask for, done once for the cycle's rounds (module docstring): the store kept open,
    the Secret blocks read once, the operational Variable synced, every free round slot held (`on_lease` learns
    the slots' lease: the cycle lock records it)."""
    from tasks import store
    from tasks.ignore_list import variable_sync
    from tasks.orchestration.round_slots import cycle_round_slots
    from tasks.runtime.secrets import blocks_read_once, preload_secrets
    from tasks.store.rows import warm_up

    with store.kept_open(db_path), blocks_read_once():
        preload_secrets()  # Secret-block values are known to the redactor before any reply is recorded
        warm_up()  # not in the first round's write window, with every other round waiting for it
        try:
            if not variable_sync.sync(db_path, now):
                logger.debug("operational exclusions: no Prefect Variable to sync this cycle")
        except Exception as exc:  # the store's problem is each round's to report (its first window)
            logger.warning("operational exclusions not synced with the Prefect Variable this cycle: %s: %s",
                           type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "")
        with cycle_round_slots(models, logger, db_path, on_lease):
            yield


def _run_models(models: list[str], config: dict[str, Any], round_ts: datetime, in_flight: int,
                confirmation: dict[str, Any], logger: Any) -> list[dict[str, Any]]:
    """Every model's round, `in_flight` probing at once (a round down to its last probes steps aside for the next:
    tasks/orchestration/admission.py), each a subflow run of this cycle; a model whose round failed is reported,
    never allowed to cost the other models theirs. A round the Prefect API refused to start is run again
    (`ROUND_RETRY_DELAYS_S`)."""
    from flows.round import canary_round, round_run_name
    from tasks.orchestration.admission import Admission, stepping_aside
    from tasks.prefect_api.subflow_runs import SubflowRuns
    from tasks.probe.http_errors import is_orchestrator_blip
    from tasks.round.steps import with_retries

    runs = SubflowRuns(canary_round)  # each round a subflow run of this cycle, started in its own thread
    progress = _Progress(len(models), logger)
    admission = Admission(probing=in_flight)  # a round down to its last probes lets the next start

    @progress.counted
    def model_round(model: str) -> dict[str, Any]:
        name = round_run_name(model, round_ts, confirmation.get("confirms"))
        return with_retries(
            lambda: runs.run(model_slug(model), name, model=model, round_ts=round_ts, refresh_snapshot=False,
                             **config, **confirmation),
            is_orchestrator_blip, ROUND_RETRY_DELAYS_S, f"the round of {model}")

    def admitted_round(model: str) -> dict[str, Any]:
        with admission.admitted() as slot, stepping_aside(slot):
            return model_round(model)

    threads = max(1, min(admission.alive_limit, len(models)))
    # one thread sends every round's heartbeat (each round's own would cost it up to 1 s at its end)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="round") as pool, \
            progress.reporting(), runs.heartbeats():
        # each round in a copy of this flow run's context: its flow run is a subflow of the cycle's
        futures = [(m, pool.submit(contextvars.copy_context().run, admitted_round, m)) for m in models]
        summaries = [_summary(m, fut) for m, fut in futures]
    return summaries


def _summary(model: str, future: Future[dict[str, Any]]) -> dict[str, Any]:
    try:
        return future.result()
    except Exception as exc:  # the round's own flow run shows the traceback
        return {"model": model, "status": str(RoundState.FAILED), "error": f"{type(exc).__name__}: {exc}"[:300]}


class _Progress:
    """The cycle's progress line every `PROGRESS_EVERY_S` (tasks/core/progress.py says it): rounds done, in
    flight, the probe requests out and waiting, the ETA."""

    def __init__(self, total: int, logger: Any) -> None:
        self.total, self.logger = total, logger
        self.done = self.running = 0
        self._lock = threading.Lock()
        self._t0 = time.monotonic()

    def counted(self, fn: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
        def run(model: str) -> dict[str, Any]:
            with self._lock:
                self.running += 1
            try:
                return fn(model)
            finally:
                with self._lock:
                    self.running -= 1
                    self.done += 1

        return run

    @contextlib.contextmanager
    def reporting(self) -> Iterator[None]:
        every = _progress_every_s()
        stop = threading.Event()
        thread = threading.Thread(target=self._report, args=(every, stop), name="cycle-progress", daemon=True)
        if every > 0 and self.total > 1:
            thread.start()
        try:
            yield
        finally:
            stop.set()

    def _report(self, every: float, stop: threading.Event) -> None:
        from tasks.probe.worker import dispatcher

        while not stop.wait(every):
            out, waiting = dispatcher().in_flight()
            with self._lock:
                done, running = self.done, self.running
            self.logger.info("%s", progress_line(done, running, self.total, time.monotonic() - self._t0,
                                                 requests=(out, waiting)))


def _progress_every_s() -> float:
    raw = os.environ.get("CANARY_PROGRESS_S", "").strip()
    try:
        return max(0.0, float(raw)) if raw else PROGRESS_EVERY_S
    except ValueError:
        return PROGRESS_EVERY_S
