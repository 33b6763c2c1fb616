"""claimer_alive (tasks/claimer.py): a claim is dead only when its process, on this host, is gone or its pid now
belongs to a process started at another time; anything it cannot judge counts as alive (the lease decides)."""

from __future__ import annotations

import os

import pytest

from tasks.claimer import claimer_alive, claimer_id, process_start, this_claimer

pytestmark = pytest.mark.unit

STARTS = {100: "5000", 200: "7777"}


def start_of(pid: int) -> str | None:
    return STARTS.get(pid)


@pytest.mark.parametrize(
    ("claimer", "alive"),
    [
        (claimer_id("box", 100, "5000"), True),  # the same process
        (claimer_id("box", 100, "4999"), False),  # pid reused by a newer process
        (claimer_id("box", 300, "5000"), False),  # no such process
        (claimer_id("box", 100, None), True),  # start time unknown: the pid alone
        (claimer_id("other", 300, "1"), True),  # another host: cannot tell
        ("garbage", True),
        (None, True),
    ],
)
def test_claimer_alive(claimer: str | None, alive: bool) -> None:
    assert claimer_alive(claimer, host="box", start_of=start_of) is alive


def test_this_process_is_its_own_live_claimer() -> None:
    me = this_claimer()
    assert str(os.getpid()) in me
    assert claimer_alive(me, host=me.split("|")[0], start_of=process_start)
