"""Two rounds of the same model never overlap: one Prefect global concurrency limit per model, held under a lease.

The limit `canary-round-<model slug>` (1 slot) is created on first use. A round holds the slot for its whole body
under a Prefect lease (`LEASE_S`) that a background thread renews; if the round's process dies, the renewals stop
and Prefect's server gives the slot back when the lease runs out (its repossessor service revokes expired leases).
A second round that cannot get the slot within `WAIT_S` (env `CANARY_ROUND_WAIT_S`) is skipped with one clear log
line instead of piling up behind a stuck one. Nothing here writes a limit's `active_slots` or sets another
process's flow run state: slots come back through their leases, and a flow run whose process died is marked Crashed
by Prefect's zombie-run automation when its heartbeats stop (tasks/orchestration/zombie_runs.py).

A lease outlives its process by up to `LEASE_S`. So that a killed round does not cost the next round of its model
that wait, every round records the lease of its slot in its journal next to the database (tasks/spool/journal.py, with
its pid and flow run): the next round of the model that finds the journal of a process that is gone releases that lease
at once (`release_dead_holders`: Prefect's own release of a lease, as the holder would have at its end). A server
that keeps its leases in memory forgets them when it restarts, and a slot taken then never comes back: run the
server with `PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE=prefect.server.concurrency.lease_storage.filesystem`
(docs/operations.md section 1; deploy/ does).

A cycle takes its rounds' slots at once (`cycle_round_slots`): one read of every limit, one acquisition of every
free slot under one lease (one renewal thread, one release at the cycle's end), instead of ~4 API calls and a
renewal thread per round. A round of such a model finds its slot held by its own process's cycle and runs
(`round_slot`); a slot another holder has goes the round's own way (release a dead holder's lease, wait, or skip).
The cycle's own slot is leased the same way (tasks/orchestration/cycle_turn.py); a cycle that died holding its
database's lock (tasks/orchestration/cycle_lock.py records both leases there) has them released by the next cycle
(`heal_dead_cycle`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from uuid import UUID

from tasks.core.plan import model_slug

#: How long a round waits for the previous round of the same model before it is skipped, seconds.
WAIT_S = 60.0
#: The slot's lease, seconds: renewed while the round runs; the slot of a dead process returns after it.
LEASE_S = 120.0

#: Round slots (limit name -> lease id) this process's cycle holds for its rounds (`cycle_round_slots`).
_CYCLE_HELD: dict[str, str] = {}
_CYCLE_HELD_LOCK = threading.Lock()


class RoundSkipped(Exception):
    """Another round of the same model still holds the slot."""


def limit_name(model: str) -> str:
    return f"canary-round-{model_slug(model)}"


def wait_seconds(env: Mapping[str, str] | None = None) -> float:
    """`CANARY_ROUND_WAIT_S` if it is a non-negative number, else `WAIT_S`."""
    raw = (os.environ if env is None else env).get("CANARY_ROUND_WAIT_S", "").strip()
    try:
        value = float(raw)
    except ValueError:
        return WAIT_S
    return value if value >= 0 else WAIT_S


def ensure_limit(model: str) -> None:
    """Create `model`'s limit on first use."""
    _limits_taken([limit_name(model)])


def release_lease(lease_id: str | None) -> bool:
    """Release the slots held under `lease_id` now (Prefect's release, as its holder would at its end); False when
    there was nothing to release (no id, already released, or expired and revoked)."""
    if not lease_id:
        return False
    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as client:
            client.release_concurrency_slots_with_lease(UUID(lease_id))
    except Exception:  # noqa: BLE001 - gone already: its slots came back
        return False
    return True


def release_dead_holders(model: str, db_path: str | None, logger: Any) -> int:
    """Release the slot leases of `model`'s rounds whose process died (journal on this machine, pid gone); returns
    how many were released. Their flow runs are left to Prefect (the zombie-run automation)."""
    if not db_path:
        return 0
    from tasks.spool.journal import dead_journals

    released = [d for d in dead_journals(db_path, model, besides="", own_process=False) if release_lease(d.lease_id)]
    if released:
        logger.warning("Released the round slot of %s: its holder's process died (lease %s released; its flow run "
                       "is Prefect's to mark Crashed when its heartbeats stop)", model,
                       ", ".join(str(d.lease_id) for d in released))
    return len(released)


def heal_dead_cycle(dead: Any, logger: Any) -> list[str]:
    """A cycle that died holding its database's lock (`dead`: the lock's record, tasks/orchestration/cycle_lock.py
    Holder): the leases of its slot and of its rounds' slots are released now, not when they run out. Returns the
    leases released. Its flow runs are left to Prefect (tasks/orchestration/zombie_runs.py)."""
    released = [str(lease) for lease in (dead.lease_id, getattr(dead, "round_lease_id", None)) if release_lease(lease)]
    logger.warning("The previous cycle of this database died holding it (%s): %s", dead.describe(),
                   f"{len(released)} slot lease(s) released" if released else "its slot leases had run out already")
    return released


def _limits_taken(names: Sequence[str]) -> dict[str, bool]:
    """Each limit of `names`, created when missing: True when its slot is taken right now (one read of every
    limit; a create per missing one)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    wanted, seen = set(names), {}
    with get_client(sync_client=True) as client:
        offset, page = 0, 200
        while True:
            batch = client.read_global_concurrency_limits(limit=page, offset=offset)
            seen.update({lim.name: lim.active_slots >= lim.limit for lim in batch if lim.name in wanted})
            if len(batch) < page:
                break
            offset += page
        for name in wanted - seen.keys():
            with contextlib.suppress(Exception):  # a concurrent creator won the race: fine
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
            seen[name] = False
    return seen


@contextlib.contextmanager
def cycle_round_slots(models: Sequence[str], logger: Any, db_path: str | None = None,
                      on_lease: Callable[[str], None] | None = None) -> Iterator[list[str]]:
    """Hold the round slot of every model whose slot is free, for the whole cycle, in one acquisition (module
    docstring); yields the models it holds; `on_lease(lease_id)` learns the lease (the cycle lock records it).
    Slots held by dead rounds are released first (as a round would); a model whose slot stays taken is left to its
    round (`round_slot`: wait, or skip). A failed batch costs nothing but the batch: every round then takes its
    own slot."""
    from tasks.prefect_api.server import is_private_api

    by_name = {limit_name(m): m for m in dict.fromkeys(models)}
    if is_private_api():  # a server of this process only: its slots guard nothing (no ~2 API calls per model)
        with _cycle_held(dict.fromkeys(by_name, "")):
            yield list(by_name.values())
        return
    try:
        taken = _limits_taken(list(by_name))
        for name, model in by_name.items():
            if taken[name] and release_dead_holders(model, db_path, logger):
                taken[name] = False
        free = [name for name in by_name if not taken[name]]
        stack = contextlib.ExitStack()
        lease_id = stack.enter_context(_leased(free)) if free else None
    except Exception as exc:  # taken meanwhile (423), the API: each round takes its own slot
        logger.warning("Round slots not taken for the whole cycle (%s: %s); each round takes its own",
                       type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "")
        yield []
        return
    with stack:
        if lease_id is not None and on_lease is not None:
            on_lease(lease_id)
        with _cycle_held(dict.fromkeys(free, lease_id or "")):
            yield [by_name[name] for name in free]


@contextlib.contextmanager
def _cycle_held(held: dict[str, str]) -> Iterator[None]:
    """Round slots (limit name -> lease id) this process's cycle holds for its rounds, for the block."""
    with _CYCLE_HELD_LOCK:
        _CYCLE_HELD.update(held)
    try:
        yield
    finally:
        with _CYCLE_HELD_LOCK:
            for name in held:
                _CYCLE_HELD.pop(name, None)


@contextlib.contextmanager
def _leased(names: list[str], lease_s: float = LEASE_S) -> Iterator[str]:
    """One slot of each limit of `names` under one lease, renewed by one thread and released at the end; yields the
    lease id; fails at once (HTTP 423) when one of them is full. Prefect's `concurrency()` would emit an event per
    limit relating all the others (a catalog's hundred limits overflow an event's related resources)."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        lease_id = UUID(str(client.increment_concurrency_slots_with_lease(
            names, 1, "concurrency", lease_s).json()["lease_id"]))
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(lease_s / 3):
            with contextlib.suppress(Exception), get_client(sync_client=True) as client:  # a blip: the next try
                client.renew_concurrency_lease(lease_id, lease_s)

    renewer = threading.Thread(target=renew, name="round-slots-lease", daemon=True)
    renewer.start()
    try:
        yield str(lease_id)
    finally:
        stop.set()
        release_lease(str(lease_id))  # else it runs out


def held_by_cycle(model: str) -> str | None:
    """The lease under which this process's cycle holds `model`'s round slot, None when it does not."""
    with _CYCLE_HELD_LOCK:
        return _CYCLE_HELD.get(limit_name(model))


@contextlib.contextmanager
def _acquire(model: str, wait_s: float) -> Iterator[str | None]:
    """`model`'s slot, waiting up to `wait_s` (TimeoutError after), under a renewed lease; yields its id."""
    from prefect.concurrency.context import ConcurrencyContext
    from prefect.concurrency.sync import concurrency

    ctx = ConcurrencyContext.get()
    before = list(ctx.cleanup_lease_ids) if ctx is not None else []
    with concurrency(
        limit_name(model), occupy=1, timeout_seconds=wait_s, lease_duration=LEASE_S, strict=True,
        raise_on_lease_renewal_failure=False,  # a blip of the API must not kill a running round
    ):
        new = [str(x) for x in (ctx.cleanup_lease_ids if ctx is not None else []) if x not in before]
        yield new[-1] if new else None


@contextlib.contextmanager
def round_slot(model: str, logger: Any, wait_s: float | None = None,
               db_path: str | None = None) -> Iterator[str | None]:
    """Hold `model`'s round slot for the body, yielding the lease it is held under (the round's journal records
    it); raise RoundSkipped (after one log line) if it stays taken. A slot this process's cycle holds for its
    rounds is the round's already."""
    cycle_lease = held_by_cycle(model)
    if cycle_lease is not None:
        yield cycle_lease or None
        return
    wait = wait_seconds() if wait_s is None else wait_s
    ensure_limit(model)
    release_dead_holders(model, db_path, logger)  # a holder whose process died: its lease goes now
    stack = contextlib.ExitStack()
    try:
        lease_id = stack.enter_context(_acquire(model, wait))
    except TimeoutError:
        logger.warning(
            "Round skipped: another round of %s still holds its slot (concurrency limit %s) after waiting %.0f s; "
            "the next scheduled round will try again (a holder that died gives it back when its lease runs out, "
            "within %.0f s)", model, limit_name(model), wait, LEASE_S,
        )
        raise RoundSkipped(model) from None
    with stack:
        yield lease_id
