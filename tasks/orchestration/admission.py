"""Which of a cycle's rounds run now: `models_in_flight` rounds probing at once, and a round down to its last few
probes steps aside for the next one.

A round's probes end unevenly: most of its calls are answered within seconds, then it waits, often for half a
minute, on the chains of an endpoint that starts slowly (12 s a turn, two turns for a tool call, a confirmation on
top), while the probe budget has room (issue 45: `concurrency` was under half used 40-50 % of a cycle, rounds
waiting on one slow chain each holding their place). So a round holds its place while it probes in earnest; once
every chain was sent and it waits only on its slowest few endpoints (`at_tail`), it steps aside (`Slot.step_aside`,
called from the probe's answer callbacks: tasks/round/probe_task.py) and the next round starts. It goes on to its end
as before (settle, save, publish, deliver); at most `ALIVE_FACTOR` x `models_in_flight` rounds are alive at once, each
in its thread, so memory stays bounded.

    admission = Admission(probing=cfg.models_in_flight)
    with admission.admitted() as slot, stepping_aside(slot):   # in the round's thread: blocks for its turn
        run the round                                           # probe_round calls step_aside() at its tail

The decision is `may_start` (pure); `Admission` is its shell, one condition variable.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator

__all__ = ["ALIVE_FACTOR", "Admission", "Slot", "at_tail", "current_step_aside", "may_start", "stepping_aside"]

#: Rounds alive at once (probing, or stepped aside and finishing), at most this many times `models_in_flight`.
ALIVE_FACTOR = 2


def at_tail(open_endpoints: int, endpoints: int) -> bool:
    """Whether a round whose every chain was sent is at its tail: some endpoint is done, and the endpoints with a
    chain still open are at most a tenth of them (at least one): it waits on its slowest few."""
    return open_endpoints < endpoints and open_endpoints <= max(1, endpoints // 10)


def may_start(probing: int, alive: int, probing_limit: int, alive_limit: int) -> bool:
    """Whether another round may start: fewer than `probing_limit` probe in earnest and fewer than `alive_limit` are
    alive in all."""
    return probing < probing_limit and alive < alive_limit


class Slot:
    """One round's place in the cycle: `step_aside()` (once; later calls do nothing) lets the next round start."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission
        self.stepped_aside = False

    def step_aside(self) -> None:
        self._admission._step_aside(self)


class Admission:
    """The shell of `may_start`: rounds wait in `admitted()` for their turn (module docstring)."""

    def __init__(self, probing: int, alive_factor: int = ALIVE_FACTOR) -> None:
        self.probing_limit = max(1, probing)
        self.alive_limit = self.probing_limit * max(1, alive_factor)
        self.probing = self.alive = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def admitted(self) -> Iterator[Slot]:
        with self._cond:
            self._cond.wait_for(lambda: may_start(self.probing, self.alive, self.probing_limit, self.alive_limit))
            self.probing += 1
            self.alive += 1
        slot = Slot(self)
        try:
            yield slot
        finally:
            with self._cond:
                self.alive -= 1
                if not slot.stepped_aside:
                    slot.stepped_aside = True
                    self.probing -= 1
                self._cond.notify_all()

    def _step_aside(self, slot: Slot) -> None:
        with self._cond:
            if slot.stepped_aside:
                return
            slot.stepped_aside = True
            self.probing -= 1
            self._cond.notify_all()


_STEP_ASIDE: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar("round_step_aside",
                                                                                       default=None)


@contextlib.contextmanager
def stepping_aside(slot: Slot) -> Iterator[None]:
    """In this context (the round's thread and the context copies it makes), `current_step_aside()` is the slot's."""
    token = _STEP_ASIDE.set(slot.step_aside)
    try:
        yield
    finally:
        _STEP_ASIDE.reset(token)


def current_step_aside() -> Callable[[], None] | None:
    """The running round's `step_aside`, None outside a cycle's admission (a round of its own, the history)."""
    return _STEP_ASIDE.get()
