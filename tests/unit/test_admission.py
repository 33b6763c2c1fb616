"""A cycle's admission (tasks/orchestration/admission.py): `models_in_flight` rounds probing at once, a round at its
tail steps aside for the next, at most ALIVE_FACTOR x as many alive; and the tail rule the probe reads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.orchestration.admission import (
    ALIVE_FACTOR,
    Admission,
    Slot,
    at_tail,
    current_step_aside,
    may_start,
    stepping_aside,
)

WAIT_S = 5.0  # how long a test waits for a thread that should get in (it gets in at once when right)
BLOCKED_S = 0.2  # how long a round that should wait is watched (a wrong admission shows at once)


@given(st.integers(0, 100), st.integers(0, 200), st.integers(1, 64), st.integers(1, 4))
def test_may_start_is_below_both_limits(probing: int, alive: int, limit: int, factor: int) -> None:
    assert may_start(probing, alive, limit, limit * factor) == (probing < limit and alive < limit * factor)


@pytest.mark.parametrize(
    ("open_endpoints", "endpoints", "tail"),
    [(1, 1, False), (0, 1, True), (1, 2, True), (2, 2, False), (1, 15, True), (2, 15, False), (3, 30, True),
     (4, 30, False), (0, 15, True)],
)
def test_a_round_is_at_its_tail_waiting_on_its_slowest_few_endpoints(open_endpoints: int, endpoints: int,
                                                                     tail: bool) -> None:
    assert at_tail(open_endpoints, endpoints) is tail


class Rounds:
    """Rounds in threads, each entering the admission and holding its slot until told."""

    def __init__(self, admission: Admission) -> None:
        self.admission = admission
        self.slots: dict[int, Slot] = {}
        self.admitted = {n: threading.Event() for n in range(20)}
        self.finish = {n: threading.Event() for n in range(20)}
        self.threads: list[threading.Thread] = []

    def start(self, n: int) -> None:
        def run() -> None:
            with self.admission.admitted() as slot:
                self.slots[n] = slot
                self.admitted[n].set()
                self.finish[n].wait(30)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)

    def end(self, n: int) -> None:
        self.finish[n].set()

    def stop(self) -> None:
        for event in self.finish.values():
            event.set()
        for thread in self.threads:
            thread.join(WAIT_S)


@contextmanager
def rounds(probing: int) -> Iterator[Rounds]:
    r = Rounds(Admission(probing=probing))
    with ExitStack() as stack:
        stack.callback(r.stop)
        yield r


def test_a_round_waits_for_one_probing_to_step_aside() -> None:
    with rounds(2) as r:
        r.start(0), r.start(1)
        assert r.admitted[0].wait(WAIT_S) and r.admitted[1].wait(WAIT_S)
        r.start(2)
        assert not r.admitted[2].wait(BLOCKED_S)  # two probe in earnest
        r.slots[0].step_aside()
        assert r.admitted[2].wait(WAIT_S)
        assert (r.admission.probing, r.admission.alive) == (2, 3)


def test_stepping_aside_twice_frees_one_place() -> None:
    with rounds(1) as r:
        r.start(0)
        assert r.admitted[0].wait(WAIT_S)
        r.slots[0].step_aside()
        r.slots[0].step_aside()
        r.start(1)
        assert r.admitted[1].wait(WAIT_S)
        r.start(2)
        assert not r.admitted[2].wait(BLOCKED_S)
        assert r.admission.probing == 1


def test_the_rounds_alive_are_bounded() -> None:
    with rounds(1) as r:
        for n in range(ALIVE_FACTOR):
            r.start(n)
            assert r.admitted[n].wait(WAIT_S)
            r.slots[n].step_aside()
        r.start(ALIVE_FACTOR)
        assert not r.admitted[ALIVE_FACTOR].wait(BLOCKED_S)  # none probing, but as many alive as allowed
        r.end(0)
        assert r.admitted[ALIVE_FACTOR].wait(WAIT_S)


def test_a_round_that_ends_without_stepping_aside_frees_its_place() -> None:
    with rounds(1) as r:
        r.start(0)
        assert r.admitted[0].wait(WAIT_S)
        r.start(1)
        assert not r.admitted[1].wait(BLOCKED_S)
        r.end(0)
        assert r.admitted[1].wait(WAIT_S)
        r.end(1)
        r.threads[1].join(WAIT_S)
        assert (r.admission.probing, r.admission.alive) == (0, 0)


@pytest.mark.parametrize(("factor", "alive"), [(0, 3), (1, 3), (2, 6), (4, 12)])
def test_the_rounds_alive_are_a_multiple_of_those_probing(factor: int, alive: int) -> None:
    assert Admission(probing=3, alive_factor=factor).alive_limit == alive  # at least as many as probe


def test_a_step_aside_after_the_end_changes_nothing() -> None:
    admission = Admission(probing=1)
    with admission.admitted() as slot:
        pass
    slot.step_aside()
    assert (admission.probing, admission.alive) == (0, 0)


def test_the_round_context_carries_its_slot() -> None:
    admission = Admission(probing=1)
    assert current_step_aside() is None
    with admission.admitted() as slot, stepping_aside(slot):
        assert slot.stepped_aside is False  # admitted: probing in earnest
        step_aside = current_step_aside()
        assert step_aside is not None
        step_aside()
        assert admission.probing == 0 and slot.stepped_aside
    assert current_step_aside() is None
