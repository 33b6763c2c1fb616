"""Two rounds of the same model never overlap: one Prefect global concurrency limit per model.

The limit `canary-round-<model slug>` (1 slot) is created on first use. A round holds the slot for its whole
body under a lease that a background thread renews; if the round's process dies, the server takes the slot
back when the lease runs out (`LEASE_S`). A second round that cannot get the slot within `WAIT_S` (env
`CANARY_ROUND_WAIT_S`) is skipped with one clear log line instead of piling up behind a stuck one.

A stale slot (held while no round of the model is running, e.g. the server restarted and forgot the lease:
leases live in the server's memory unless PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE says otherwise) would
skip every later round forever. So before skipping, a round asks the API whether any *other* `canary-round`
run of the same model is running; if none is, it frees the slot, says so in the log, and tries once more.
Works the same against `prefect server start`, the temporary server `canary run` starts, and the tests'
`prefect_test_harness`.

A slot held by a round whose process is gone heals at once, not after the lease or an hour: every round that
holds a slot keeps a journal next to the database with its pid and flow run id (tasks/spool.py). When the
slot is taken, the next round looks for holders whose journal names a dead process on this machine, marks
their flow runs Crashed in Prefect and frees the slot before it waits. Dead holders' flow runs are marked
Crashed even when their slot has meanwhile come back by itself (its lease ran out): nothing stays Running.

A cycle takes its rounds' slots at once (`cycle_round_slots`): one read of every limit, one acquisition of every
free slot under one lease (one renewal thread, one release at the cycle's end), instead of ~4 API calls and a
renewal thread per round. A round of such a model finds its slot held by its own process's cycle and runs
(`round_slot`); a slot another holder has goes the round's own way (heal, wait, free a stale one, or skip).

The cycle's slot heals the same way (`heal_dead_cycle`): a cycle holds the database's file lock
(tasks/cycle_lock.py) and records its flow run and its slot's lease there; the next cycle that finds such a record
marks that flow run and its round runs Crashed and releases the lease at once, instead of waiting out the
cycle slot's 300 s lease.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from tasks.core.plan import model_slug

#: How long a round waits for the previous round of the same model before it is skipped, seconds.
WAIT_S = 60.0
#: Seconds the one more try after freeing a stale slot waits for it (whatever `CANARY_ROUND_WAIT_S`): the slot is
#: free at once, but Prefect's acquisition can take a busy machine more than a short configured wait.
REACQUIRE_S = 5.0
#: The slot's lease, seconds: renewed while the round runs; the slot of a dead process returns after it.
LEASE_S = 120.0
#: A `canary-round` run still marked running after this long is a zombie, not a live holder.
STALE_RUN = timedelta(hours=1)
FLOW_NAME = "canary-round"


#: Round slots (limit names) this process's cycle holds for its rounds (`cycle_round_slots`).
_CYCLE_HELD: set[str] = set()
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


def live_holders(
    runs: Sequence[tuple[UUID, str | None, datetime | None]], model: str, own_id: UUID | None, now: datetime
) -> list[UUID]:
    """Running rounds (id, model parameter, start time) that may hold `model`'s slot: not this run, not a
    zombie; a run without a model parameter may be any model, so it counts."""
    return [
        run_id
        for run_id, run_model, started in runs
        if run_id != own_id
        and (run_model is None or run_model == model)
        and (started is None or now - started < STALE_RUN)
    ]


def ensure_limit(model: str) -> bool:
    """Create `model`'s limit on first use; True when its slot is taken right now."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectNotFound

    name = limit_name(model)
    with get_client(sync_client=True) as client:
        try:
            limit = client.read_global_concurrency_limit_by_name(name)
            return limit.active_slots >= limit.limit
        except ObjectNotFound:
            with contextlib.suppress(Exception):  # a concurrent creator won the race: fine
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
            return False


def running_flow_runs(flow_name: str) -> list[Any]:
    """The flow runs of `flow_name` that Prefect says are Running (at most 200)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    with get_client(sync_client=True) as client:
        return list(client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING]))
            ),
            limit=200,
        ))


def _running_rounds() -> list[tuple[UUID, str | None, datetime | None]]:
    return [(r.id, (r.parameters or {}).get("model"), r.start_time) for r in running_flow_runs(FLOW_NAME)]


def _own_flow_run_id() -> UUID | None:
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    return ctx.flow_run.id if ctx is not None and ctx.flow_run is not None else None


def free_stale_slot(model: str, logger: Any) -> bool:
    """Free `model`'s slot when no other round of it is running; True when it did."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

    holders = live_holders(_running_rounds(), model, _own_flow_run_id(), datetime.now(UTC))
    if holders:
        return False
    with get_client(sync_client=True) as client:
        client.update_global_concurrency_limit(
            limit_name(model), GlobalConcurrencyLimitUpdate(active_slots=0)
        )
    logger.warning(
        "Freed a stale round slot of %s (concurrency limit %s): it was held but no other round of the model "
        "is running", model, limit_name(model),
    )
    return True


@contextlib.contextmanager
def _acquire(model: str, wait_s: float) -> Iterator[None]:
    from prefect.concurrency.sync import concurrency

    with concurrency(
        limit_name(model), occupy=1, timeout_seconds=wait_s, lease_duration=LEASE_S, strict=True,
        raise_on_lease_renewal_failure=False,  # a blip of the API must not kill a running round
    ):
        yield


def heal_dead_holders(model: str, db_path: str | None, logger: Any, *, taken: bool = True) -> int:
    """Free `model`'s slot from rounds whose process died (journal on this machine, pid gone): their flow
    runs are marked Crashed and, when the slot is `taken` and no live holder remains, the slot is freed.
    Returns how many."""
    if not db_path:
        return 0
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate
    from prefect.states import Crashed

    from tasks.spool import dead_journals

    own = _own_flow_run_id()
    dead = {d.flow_run_id for d in dead_journals(db_path, model, besides="", own_process=False) if d.flow_run_id}
    dead.discard(str(own) if own else None)
    if not dead:
        return 0
    running = _running_rounds()
    zombies = [run_id for run_id, run_model, _ in running if str(run_id) in dead]
    others = [r for r in live_holders(running, model, own, datetime.now(UTC)) if str(r) not in dead]
    if not zombies and not taken:
        return 0
    with get_client(sync_client=True) as client:
        for run_id in zombies:
            with contextlib.suppress(Exception):
                client.set_flow_run_state(run_id, Crashed(message="the round's process died"), force=True)
        if taken and not others:
            client.update_global_concurrency_limit(limit_name(model), GlobalConcurrencyLimitUpdate(active_slots=0))
    if taken and not others:
        logger.warning("Freed the round slot of %s: %d holder(s) whose process died (flow runs marked Crashed)",
                       model, len(dead))
    else:
        logger.warning("Rounds of %s whose process died: %d flow run(s) marked Crashed", model, len(zombies))
    return len(dead)


def heal_dead_cycle(dead: Any, logger: Any) -> list[str]:
    """A cycle that died holding its database's lock (`dead`: the lock's record, tasks/cycle_lock.py Holder): its
    flow run and the round runs under it that still run are marked Crashed, and its slot's lease is released now
    (not when the lease runs out). Returns the flow run ids marked Crashed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Crashed

    if not dead.flow_run_id:
        return []
    cycle_id = UUID(dead.flow_run_id)
    unfinished = FlowRunFilterState(type=FlowRunFilterStateType(
        any_=[StateType.RUNNING, StateType.PENDING, StateType.SCHEDULED]))
    marked: list[str] = []
    with get_client(sync_client=True) as client:
        runs = []
        for run_filter in (FlowRunFilter(id=FlowRunFilterId(any_=[cycle_id]), state=unfinished),
                           FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[cycle_id]),
                                         state=unfinished)):
            with contextlib.suppress(Exception):  # another server's run (a private one that died with it)
                runs += client.read_flow_runs(flow_run_filter=run_filter, limit=200)
        for run in runs:
            with contextlib.suppress(Exception):
                client.set_flow_run_state(run.id, Crashed(message=f"its cycle's process died ({dead.describe()})"),
                                          force=True)
                marked.append(str(run.id))
        if dead.lease_id:
            with contextlib.suppress(Exception):  # already expired and revoked: nothing to free
                client.release_concurrency_slots_with_lease(UUID(dead.lease_id))
    logger.warning("The previous cycle of this database died holding it (%s): %d flow run(s) marked Crashed%s",
                   dead.describe(), len(marked), ", its cycle slot released" if dead.lease_id else "")
    return marked


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
def cycle_round_slots(models: Sequence[str], logger: Any, db_path: str | None = None) -> Iterator[list[str]]:
    """Hold the round slot of every model whose slot is free, for the whole cycle, in one acquisition (module
    docstring); yields the models it holds. Slots held by dead rounds are healed first (as a round would); a
    model whose slot stays taken is left to its round (`round_slot`: wait, or skip). A failed batch costs
    nothing but the batch: every round then takes its own slot."""
    by_name = {limit_name(m): m for m in dict.fromkeys(models)}
    try:
        taken = _limits_taken(list(by_name))
        for name, model in by_name.items():
            heal_dead_holders(model, db_path, logger, taken=taken[name])
        free = [name for name in by_name if not taken[name]]
        stack = contextlib.ExitStack()
        if free:
            stack.enter_context(_leased(free))
    except Exception as exc:  # taken meanwhile (423), the API: each round takes its own slot
        logger.warning("Round slots not taken for the whole cycle (%s: %s); each round takes its own",
                       type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "")
        yield []
        return
    with stack:
        with _CYCLE_HELD_LOCK:
            _CYCLE_HELD.update(free)
        try:
            yield [by_name[name] for name in free]
        finally:
            with _CYCLE_HELD_LOCK:
                _CYCLE_HELD.difference_update(free)


@contextlib.contextmanager
def _leased(names: list[str]) -> Iterator[None]:
    """One slot of each limit of `names` under one lease, renewed by one thread and released at the end; fails at
    once (HTTP 423) when one of them is full. Prefect's `concurrency()` would emit an event per limit relating all
    the others (a catalog's hundred limits overflow an event's related resources)."""
    from uuid import UUID

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        lease_id = UUID(str(client.increment_concurrency_slots_with_lease(
            names, 1, "concurrency", LEASE_S).json()["lease_id"]))
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(LEASE_S / 3):
            with contextlib.suppress(Exception), get_client(sync_client=True) as client:  # a blip: the next try
                client.renew_concurrency_lease(lease_id, LEASE_S)

    renewer = threading.Thread(target=renew, name="round-slots-lease", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        with contextlib.suppress(Exception), get_client(sync_client=True) as client:  # else the lease runs out
            client.release_concurrency_slots_with_lease(lease_id)


def held_by_cycle(model: str) -> bool:
    """True when this process's cycle holds `model`'s round slot."""
    with _CYCLE_HELD_LOCK:
        return limit_name(model) in _CYCLE_HELD


@contextlib.contextmanager
def round_slot(model: str, logger: Any, wait_s: float | None = None, db_path: str | None = None) -> Iterator[None]:
    """Hold `model`'s round slot for the body; raise RoundSkipped (after one log line) if it stays taken. A slot
    this process's cycle holds for its rounds is the round's already."""
    if held_by_cycle(model):
        yield
        return
    wait = wait_seconds() if wait_s is None else wait_s
    # taken: by a live round, or by one whose process died (healed at once); free: a dead round's flow run
    # may still say Running (its lease ran out since), and is marked Crashed
    heal_dead_holders(model, db_path, logger, taken=ensure_limit(model))
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(_acquire(model, wait))
    except TimeoutError:
        if not free_stale_slot(model, logger):
            logger.warning(
                "Round skipped: another round of %s still holds its slot (concurrency limit %s) after "
                "waiting %.0f s; the next scheduled round will try again", model, limit_name(model), wait,
            )
            raise RoundSkipped(model) from None
        try:  # a freed slot is free at once; the acquisition itself may take a busy machine more than `wait`
            stack.enter_context(_acquire(model, REACQUIRE_S))
        except TimeoutError:
            logger.warning("Round skipped: the slot of %s was taken again at once", model)
            raise RoundSkipped(model) from None
    with stack:
        yield
