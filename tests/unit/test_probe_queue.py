"""tasks/probe/call_queue.py: the probe worker's waiting calls. By priority under the bound; an endpoint whose request
parked is known slow, its waiting and later calls start at once, parked, within the cap; a fast first text ends
that."""

from __future__ import annotations

import pytest

from tasks.probe.call_queue import LANE_FACTOR, ProbeQueue

pytestmark = pytest.mark.unit


def drain(q: ProbeQueue, counted: int = 0, running: int = 0, limit: int = 10, cap: int = 40) -> list[tuple[str, bool]]:
    out = []
    while (found := q.next(counted, running, limit, cap, laned=0)) is not None:
        out.append(found)
        if not found[1]:
            counted += 1
        running += 1
    return out


def test_calls_start_lowest_priority_first_while_under_the_bound() -> None:
    q = ProbeQueue()
    for priority, name in [(3, "c"), (1, "a"), (2, "b"), (1, "a2")]:
        q.push(priority, "ep-" + name, name)
    assert drain(q, limit=3) == [("a", False), ("a2", False), ("b", False)]
    assert len(q) == 1
    assert q.next(counted=3, running=3, limit=3, cap=12, laned=0) is None  # the bound holds the last one


def test_a_parked_endpoint_moves_its_waiting_calls_to_the_lane_in_their_order() -> None:
    q = ProbeQueue()
    q.push(5, "slow", "slow-2")
    q.push(1, "fast", "fast-1")
    q.push(4, "slow", "slow-1")
    q.push(9, "fast", "fast-9")
    q.parked("slow")
    assert q.is_slow("slow") and not q.is_slow("fast")
    # the bound is full: the lane still starts, parked from its start; the fast calls wait
    assert drain(q, counted=10, running=10, limit=10, cap=40) == [("slow-1", True), ("slow-2", True)]
    q.push(0, "slow", "slow-later")  # a call that comes later goes to the lane too
    assert drain(q, counted=10, running=12, limit=10, cap=40) == [("slow-later", True)]
    assert drain(q, counted=0, running=13) == [("fast-1", False), ("fast-9", False)]


def test_the_lane_stays_within_the_cap_on_requests_in_flight() -> None:
    q = ProbeQueue()
    q.parked("slow")
    for i in range(5):
        q.push(i, "slow", i)
    assert len(drain(q, counted=0, running=37, limit=10, cap=40)) == 3
    assert len(q) == 2


def test_a_fast_first_text_makes_the_endpoint_ordinary_again() -> None:
    q = ProbeQueue()
    q.parked("ep")
    q.answered_fast("ep")
    q.push(1, "ep", "x")
    assert drain(q) == [("x", False)]


def test_at_most_the_bound_of_calls_run_from_the_lane_at_once() -> None:
    q = ProbeQueue()
    q.parked("slow")
    for i in range(5):
        q.push(i, "slow", i)
    full = 3 * LANE_FACTOR
    assert q.next(counted=0, running=10, limit=3, cap=40, laned=full) is None  # the lane's bound runs already
    assert q.next(counted=0, running=10, limit=3, cap=40, laned=full - 1) == (0, True)
