"""The `canary-cycle` flow: every configured model's round at one schedule tick, concurrently, in one process.

    canary-cycle ──> round-<model> (task, one per model, at most `models_in_flight` at once)
                       └──> canary-round-<model>-<stamp> (the model's round: a named subflow run in the UI)

One process holds one language detector (built once) and one bounded pool of probe requests (`concurrency`, sent by
one probe worker process: tasks/probe_worker.py) shared by every model in flight; the policy stays sequential per
model (each model's round settles and saves on its own). Two cycles of one database never overlap: a file lock beside
the database (`<db>.cycle.lock`, tasks/cycle_lock.py: it holds between `canary run`s that each started a private
Prefect server), then a Prefect global concurrency limit of one slot per DuckDB file (`cycle_limit_name`: it
holds across the workers of one server). A cycle that had to wait for the previous one, or that starts late, says
so in its log and its result (`late_s`), it is never silently skipped; one that waited `CYCLE_WAIT_S` in vain
returns `status: late` with the reason (and `canary run` exits 1). The rounds' time (`round_ts`, the round ids) is
read once the lock and the slot are held, so two cycles that waited for each other never share it; a cycle passes
its flow run id to its rounds (`run_id`), and a round's save refuses a round id another run holds
(tasks/store/settlement.py `claim_round_id`). A cycle that died holding the lock is healed by
the next one at once: its flow runs marked Crashed, its slot's lease released (tasks/concurrency.py). `canary run` runs
one cycle; `canary serve` and the work-pool deployment schedule one every `interval_min`.

Shards (docs/operations.md "Past one machine"): one deployment per shard, each with its own `models` and
`db_path` parameters. A shard's cycles hold the slot of its own file (`canary-cycle-<db stem>`), so shards run
at the same time on workers of one pool; the default file `canary.duckdb` keeps the slot `canary-cycle`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from tasks.clock import utcnow
from tasks.config import DEFAULT_DB_PATH
from tasks.core.plan import model_slug
from tasks.cycle_lock import CycleLockTimeout
from tasks.secrets import install_redaction

#: The slot of the default database (`canary.duckdb`): one shard, the name every single-file setup uses.
CYCLE_LIMIT = "canary-cycle"
#: How long a cycle waits for the previous one before it gives up (and says so), seconds.
CYCLE_WAIT_S = 600.0
#: The name a confirmation run of the cycle deployment is scheduled under, and keeps when it runs.
CONFIRM_RUN_PREFIX = "canary-confirm-"


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


def _start_delay_s() -> float:
    """How long after its scheduled time this flow run started (0 for a run started by hand)."""
    from prefect.runtime import flow_run

    planned = flow_run.scheduled_start_time
    return max(0.0, (utcnow() - planned).total_seconds()) if planned is not None else 0.0


def cycle_limit_name(db_path: str) -> str:
    """The cycle slot of a database file: `canary-cycle` for `canary.duckdb` (wherever it lives), else
    `canary-cycle-<stem>` (`shard-b.duckdb` -> `canary-cycle-shard-b`), like the publish directory's name.
    One writer per file is what the slot protects, so shards with their own files never wait for each other;
    two files of one stem in different directories share a slot (they wait, they never clash)."""
    stem = Path(db_path).expanduser().stem
    if stem == Path(DEFAULT_DB_PATH).stem:
        return CYCLE_LIMIT
    return f"{CYCLE_LIMIT}-{model_slug(stem) or 'db'}"


def _new_lease_ids(before: list[Any]) -> list[str]:
    """Leases granted to this flow run since `before` (Prefect records each in the run's ConcurrencyContext)."""
    from prefect.concurrency.context import ConcurrencyContext

    ctx = ConcurrencyContext.get()
    return [str(x) for x in (ctx.cleanup_lease_ids if ctx is not None else []) if x not in before]


def _lease_ids() -> list[Any]:
    from prefect.concurrency.context import ConcurrencyContext

    ctx = ConcurrencyContext.get()
    return list(ctx.cleanup_lease_ids) if ctx is not None else []


@contextlib.contextmanager
def _cycle_slot(name: str, wait_s: float, on_lease: Any = None) -> Any:
    """One cycle of a database at a time; yields how long this one waited for the previous one, seconds.
    `on_lease(lease_id)` learns the slot's lease (recorded in the cycle lock, so a dead cycle's slot is freed)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.concurrency.sync import concurrency
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            with contextlib.suppress(Exception):  # a concurrent creator won the race: fine
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
    t0 = time.monotonic()
    before = _lease_ids()
    with concurrency(name, occupy=1, timeout_seconds=wait_s, lease_duration=300, strict=True,
                     raise_on_lease_renewal_failure=False):
        if on_lease is not None:
            for lease_id in _new_lease_ids(before)[-1:]:
                on_lease(lease_id)
        yield time.monotonic() - t0


@flow(name="canary-cycle", flow_run_name=_flow_run_name,
      task_runner=ThreadPoolTaskRunner(max_workers=64))  # type: ignore[arg-type]
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
    from tasks.concurrency import heal_dead_cycle
    from tasks.config_loading import resolve_config
    from tasks.cycle_lock import cycle_lock
    from tasks.round.probe_task import warm_up
    from tasks.round.steps import flow_run_id
    from tasks.round.steps import refresh_snapshot as refresh_analysts_snapshot

    logger = get_run_logger()
    cfg = resolve_config(config_path, overrides, base_url=base_url, db_path=db_path)
    chosen = [model] if model else list(dict.fromkeys(models or cfg.models))  # a model once per cycle
    confirmation = {"only": only, "contracts": contracts, "confirms": confirms} if only else {}
    # each round assembles its config from the same parameters (tasks/config_loading.py `resolve_config`)
    config = {"mode": mode, "config_path": config_path, "base_url": base_url, "db_path": db_path,
              "overrides": overrides}
    scheduled = cycle_ts or utcnow()  # what the log says; the rounds' time is read once the locks are held
    slot = cycle_limit_name(cfg.db_path)
    t_lock = time.monotonic()
    try:
        with cycle_lock(cfg.db_path, CYCLE_WAIT_S, on_wait=_waiting(cfg.db_path, logger)) as lock:
            waited_lock_s = time.monotonic() - t_lock
            if lock.previous is not None:  # a cycle died holding it: its runs Crashed, its slot freed now
                heal_dead_cycle(lock.previous, logger)
            lock.record(flow_run_id=flow_run_id())
            with _cycle_slot(slot, CYCLE_WAIT_S, on_lease=lambda lease: lock.record(lease_id=lease)) as waited_s:
                late_s = max(waited_s + waited_lock_s, _start_delay_s())
                if late_s > 60:
                    logger.warning("Cycle %s started %.0f s late (the previous cycle was still running or the "
                                   "worker was busy)", scheduled.isoformat(), late_s)
                # The rounds' time, read now that no other cycle of the database runs: two cycles that waited for
                # each other never share it (their round ids differ; the save refuses one that would not)
                round_ts = cycle_ts or utcnow()
                warm_up(build_now=len(chosen) > 1)  # one detector and one probe worker for every model
                t0 = time.monotonic()
                summaries = _run_models(chosen, {**config, "run_id": flow_run_id()}, round_ts, cfg.models_in_flight,
                                        confirmation)
                refresh_analysts_snapshot(cfg)  # once per cycle, not once per write
                wall_s = time.monotonic() - t0
    except (TimeoutError, CycleLockTimeout) as exc:
        reason = (str(exc) if isinstance(exc, CycleLockTimeout)
                  else f"the previous cycle still held the slot {slot} after {CYCLE_WAIT_S:.0f} s")
        logger.error("Cycle %s not run: %s", scheduled, reason)
        return {"cycle_ts": scheduled.isoformat(), "status": "late", "late_s": CYCLE_WAIT_S, "slot": slot,
                "reason": reason, "rounds": []}
    logger.info("Cycle of %d models in %.1f s (slot %s, %s): %s", len(chosen), wall_s, slot, cfg.db_path,
                ", ".join(f"{s['model']} {s.get('status')}" for s in summaries))
    return {"cycle_ts": round_ts.isoformat(), "status": "complete", "late_s": late_s, "wall_s": wall_s,
            "slot": slot, "db_path": cfg.db_path, "rounds": summaries}


def _waiting(db_path: str, logger: Any) -> Any:
    def say(holder: Any) -> None:
        who = holder.describe() if holder is not None else "another process"
        logger.warning("Waiting for the previous cycle of %s (%s) to end", db_path, who)

    return say


def _run_models(models: list[str], config: dict[str, Any], round_ts: datetime, in_flight: int,
                confirmation: dict[str, Any]) -> list[dict[str, Any]]:
    """Every model's round, at most `in_flight` at once (a slow model does not hold the others back); a model
    whose round failed is reported, never allowed to cost the other models theirs."""
    from tasks.round.steps import retry_on_orchestrator

    slots = threading.BoundedSemaphore(max(1, in_flight))

    @task(name="round", task_run_name="round-{model}", cache_policy=NO_CACHE, retries=2,
          retry_delay_seconds=[10, 30], retry_condition_fn=retry_on_orchestrator)
    def model_round(model: str) -> dict[str, Any]:
        from flows.round import canary_round

        # Each round keeps its own flow-run heartbeats (up to 1 s at its end, the engine joins the heartbeat
        # thread): turning them off for the subflow with a SettingsContext in this thread made a served cycle's
        # second model wait for the first one's probes (tests/e2e/test_serve.py caught it).
        with slots:
            return canary_round(model=model, round_ts=round_ts, refresh_snapshot=False, **config, **confirmation)

    futures = [(m, model_round.submit(m)) for m in models]
    summaries: list[dict[str, Any]] = []
    for m, fut in futures:
        try:
            summaries.append(fut.result())
        except Exception as exc:  # the round's own flow run shows the traceback
            summaries.append({"model": m, "status": "failed", "error": f"{type(exc).__name__}: {exc}"[:300]})
    return summaries
