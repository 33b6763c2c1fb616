"""The probe's watchdogs share one deadline thread per process (tasks/probe/attempt.py `_Deadlines`): each fires at its
own deadline whatever order they were armed in, and a disarmed one does nothing."""

from __future__ import annotations

import threading
import time

import pytest

from tasks.probe.attempt import _Deadlines, _Watchdog

pytestmark = pytest.mark.unit


class _Recording(_Watchdog):
    def __init__(self) -> None:
        super().__init__()
        self.at: float | None = None
        self.done = threading.Event()

    def fire(self) -> None:
        self.at = time.monotonic()
        self.done.set()


def test_an_earlier_deadline_armed_later_wakes_the_thread() -> None:
    deadlines, late, early = _Deadlines(), _Recording(), _Recording()
    t0 = time.monotonic()
    deadlines.add(30.0, late)  # the thread now sleeps until t0 + 30 s
    deadlines.add(0.2, early)
    assert early.done.wait(5.0), "the earlier deadline did not fire"
    assert early.at is not None and 0.19 <= early.at - t0 < 2.0
    assert not late.done.is_set()


def test_deadlines_fire_in_order_and_past_ones_at_once() -> None:
    deadlines = _Deadlines()
    dogs = [_Recording() for _ in range(4)]
    t0 = time.monotonic()
    for dog, seconds in zip(dogs, (0.3, -1.0, 0.1, 0.2), strict=True):
        deadlines.add(seconds, dog)
    for dog in dogs:
        assert dog.done.wait(5.0)
    times = [dog.at - t0 for dog in dogs if dog.at is not None]
    assert times[1] < 0.1  # a deadline already past fires at once
    assert times[1] <= times[2] <= times[3] <= times[0]


def test_a_disarmed_watchdog_does_not_shut_its_socket() -> None:
    import socket

    a, b = socket.socketpair()
    try:
        dog = _Watchdog()
        dog._sock = a  # what arm() takes from the response's network stream
        dog.disarm()
        dog.fire()
        assert not dog.fired
        a.sendall(b"still open")
        assert b.recv(16) == b"still open"
    finally:
        a.close()
        b.close()


def test_a_forked_child_fires_its_own_deadlines() -> None:
    import os

    from tasks.probe import attempt as probe

    parent_dog = _Recording()
    probe._DEADLINES.add(0.01, parent_dog)  # the parent's deadline thread is running
    assert parent_dog.done.wait(5.0)
    pid = os.fork()
    if pid == 0:  # the child: a new deadline thread, not the parent's (which does not exist here)
        dog = _Recording()
        probe._DEADLINES.add(0.05, dog)
        os._exit(0 if dog.done.wait(5.0) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
