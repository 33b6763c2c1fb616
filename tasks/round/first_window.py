"""A round's first write window (land what earlier rounds left, reconcile the operational Variable, read the prior,
mark the round running), shared by the rounds of this process that ask for it at the same moment (group commit).

A cycle starts up to `models_in_flight` rounds at once. Each used to open its own window, one after another behind
the store's lock, each window's handful of queries waiting for the interpreter among all the other rounds' threads:
at 32 rounds starting at once the last waited seconds for its first probe (issue 45, benchmarks/
profile_round_start.py). Here the first round to get the turn opens one window and does the work of every round
that is waiting meanwhile, one after another, with the same queries and the same per-round results; the others wait
for their result instead of for the lock, and each goes on as soon as its own part is done. A round alone gets its
own window, as before.

A round's own failure (RoundIdTaken: another run's round holds its id) is its own; a store that cannot be had or
read (StoreError) is every waiting round's, as it would have been for each.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.settle import Prior
from tasks.core.types import RoundInfo


@dataclass
class FirstWindow:
    """One round's ask, and then its answer."""

    cfg: CanaryConfig
    model: str
    round_id: str
    round_ts: datetime
    run_id: str | None
    ui_value: Any  # the operational Variable as read from Prefect (variable_sync.UNREACHABLE: nothing to do)
    spools: list[Any] = field(default_factory=list)  # deferred rounds on disk, judged outside the window
    variable_value: Any = None
    leftovers: list[str] = field(default_factory=list)  # one line per thing landed or marked (the round logs them)
    prior: Prior | None = None
    error: BaseException | None = None
    answered: threading.Event = field(default_factory=threading.Event)

    @property
    def done(self) -> bool:
        return self.answered.is_set()


class _Turns:
    """The rounds of one database waiting for a first window, and whose turn it is to open one."""

    def __init__(self) -> None:
        self.waiting: list[FirstWindow] = []
        self.waiting_lock = threading.Lock()
        self.turn = threading.Lock()


#: How often a round waiting for its answer looks whether the turn is free (a turn that ended without it), seconds.
TURN_POLL_S = 0.02
_TURNS: dict[str, _Turns] = {}
_TURNS_LOCK = threading.Lock()


def _turns(db_path: str) -> _Turns:
    key = str(Path(db_path).expanduser().resolve())
    with _TURNS_LOCK:
        return _TURNS.setdefault(key, _Turns())


def first_window(ask: FirstWindow, lock_timeout_s: float) -> FirstWindow:
    """`ask` answered (its prior, leftovers and Variable value set), in a window of its own or in one that a
    round of this process opened for every round waiting; raises the round's error or the store's StoreError."""
    turns = _turns(ask.cfg.db_path)
    with turns.waiting_lock:
        turns.waiting.append(ask)
    while not ask.done:  # answered by the round whose turn it is, as soon as its part is done; else take the turn
        if turns.turn.acquire(blocking=False):
            try:
                if not ask.done:
                    _answer(turns, ask.cfg.db_path, lock_timeout_s)
            finally:
                turns.turn.release()
        else:
            ask.answered.wait(TURN_POLL_S)
    if ask.error is not None:
        raise ask.error
    return ask


def _take(turns: _Turns) -> list[FirstWindow]:
    with turns.waiting_lock:
        batch, turns.waiting = turns.waiting, []
    return batch


def _answer(turns: _Turns, db_path: str, lock_timeout_s: float) -> None:
    """One window for every round waiting once it is open (those that came while it waited for the lock too)."""
    from tasks import store
    from tasks.errors import RoundIdTaken, StoreError
    from tasks.ignore_list import variable_sync
    from tasks.round.write_window import land_leftovers, read_prior
    from tasks.runtime.clock import utcnow
    from tasks.store.settlement import mark_running

    batch: list[FirstWindow] = []
    try:
        with store.open_store(db_path, lock_timeout_s=lock_timeout_s, snapshot=False) as con:
            batch = _take(turns)
            for ask in batch:
                try:
                    ask.variable_value = variable_sync.reconcile(con, ask.round_ts, ask.ui_value)
                    ask.leftovers = land_leftovers(con, ask.cfg, ask.model, ask.round_id, ask.spools, utcnow())
                    ask.prior = prior = read_prior(con, ask.cfg, ask.model, ask.round_ts)
                    mark_running(con, RoundInfo(ask.round_id, ask.model, ask.round_ts, prior.mode, run_id=ask.run_id),
                                 started_at=utcnow())
                except RoundIdTaken as exc:  # this round's, not the others'
                    ask.error = exc
                ask.answered.set()  # it goes on at once, while the window answers the next
    except StoreError as exc:  # the file's: every round not answered yet
        batch = batch or _take(turns)
        for ask in batch:
            if not ask.done:
                ask.error = exc
    finally:
        batch = batch or _take(turns)
        for ask in batch:
            if not ask.done and ask.error is None:  # something else went wrong in the window: each round says so
                ask.error = StoreError(f"store: {ask.round_id}'s first window was not answered")
            ask.answered.set()
