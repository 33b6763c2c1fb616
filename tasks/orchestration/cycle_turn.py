"""A cycle's turn at its database: one cycle of a database at a time (flows/cycle.py's module docstring).

    with cycle_turn(db_path, slot, wait_s, scheduled, logger) as (lock, late_s):
        ...  # the cycle's rounds: no other cycle of this database runs

First the file lock beside the database (tasks/orchestration/cycle_lock.py: it holds between processes that each started
a private Prefect server; a dead holder's leases are healed at once, tasks/orchestration/round_slots.py
`heal_dead_cycle`), then the Prefect global concurrency limit of the file, one slot (`slot`: flows/cycle.py
`cycle_limit_name`; it holds across the workers of one server), held under a lease the lock records. Waiting longer than
`wait_s` for either raises (`CycleLockTimeout`, TimeoutError); a cycle that starts over a minute late says so in its
log.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from tasks.orchestration.cycle_lock import CycleLock, cycle_lock
from tasks.runtime.clock import utcnow


@contextlib.contextmanager
def cycle_turn(db_path: str, slot: str, wait_s: float, scheduled: datetime, logger: Any,
               ) -> Iterator[tuple[CycleLock, float]]:
    """The cycle's turn (module docstring): the cycle lock (a dead holder's slots healed, this run recorded), then
    the database's cycle slot; yields the lock and how late the cycle starts, seconds (said when over a minute)."""
    from tasks.orchestration.round_slots import heal_dead_cycle
    from tasks.round.steps import flow_run_id

    t_lock = time.monotonic()
    with cycle_lock(db_path, wait_s, on_wait=_waiting(db_path, logger)) as lock:
        waited_lock_s = time.monotonic() - t_lock
        if lock.previous is not None:  # a cycle died holding it: its slots' leases released now
            heal_dead_cycle(lock.previous, logger)
        lock.record(flow_run_id=flow_run_id())
        with _cycle_slot(slot, wait_s, on_lease=lambda lease: lock.record(lease_id=lease)) as waited_s:
            late_s = max(waited_s + waited_lock_s, _start_delay_s())
            if late_s > 60:
                logger.warning("Cycle %s started %.0f s late (the previous cycle was still running or the "
                               "worker was busy)", scheduled.isoformat(), late_s)
            yield lock, late_s


def _waiting(db_path: str, logger: Any) -> Any:
    def say(holder: Any) -> None:
        who = holder.describe() if holder is not None else "another process"
        logger.warning("Waiting for the previous cycle of %s (%s) to end", db_path, who)

    return say


def _start_delay_s() -> float:
    """How long after its scheduled time this flow run started (0 for a run started by hand)."""
    from prefect.runtime import flow_run

    planned = flow_run.scheduled_start_time
    return max(0.0, (utcnow() - planned).total_seconds()) if planned is not None else 0.0


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
def _cycle_slot(name: str, wait_s: float, on_lease: Any = None) -> Iterator[float]:
    """One cycle of a database at a time; yields how long this one waited for the previous one, seconds.
    `on_lease(lease_id)` learns the slot's lease (recorded in the cycle lock, so a dead cycle's slot is freed)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.concurrency.sync import concurrency
    from prefect.exceptions import ObjectNotFound

    from tasks.prefect_api.server import is_private_api

    if is_private_api():  # a server of this process only: the cycle lock is the one that holds
        yield 0.0
        return
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
