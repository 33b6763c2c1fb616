"""The probe worker's waiting calls (tasks/probe/loop.py `LoopRunner`): plain data, no I/O, no clock.

Calls wait in priority order (lowest first: tasks/round/probe_task.py gives a chain's later attempts first, then the
first contract of every endpoint in flight, then round by round). The worker starts the next one whenever fewer than
`concurrency` requests are counted, counting none that is parked (no first text yet `PARK_AFTER_S` after its
start: a slow start costs the loop nothing while it waits).

A slow start announces itself only by holding a counted slot for `PARK_AFTER_S` and parking, and an endpoint that
starts slowly does so for every contract: its other calls would each hold a slot as long again, and wait their turn
in the queue first, so the cycle's tail was its last rounds' slow chains started last (issue 45). So an endpoint
whose request parked is known slow (`parked`): its waiting calls, and the ones that come later, go to a lane of
their own that starts at once, parked from their start (not counted until their first text), within the worker's cap
on requests in flight and at most `LANE_FACTOR` x `concurrency` of them at once. The first text of a call to it
within `PARK_AFTER_S` makes it an endpoint like the others again (`answered_fast`).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Any

#: Requests started from the lane of known slow endpoints at once, at most this many times `concurrency` (and within
#: the worker's cap on requests in flight, `PARKED_FACTOR` x `concurrency`). A laned request waits idle until its
#: first text, so the lane's cap, not the shared bound, set the pace of a catalog whose every model has a slow
#: endpoint: at 1 x, 100 models x 6 slow attempts x 12.2 s / 80 = 91.5 s of lane alone, a tool call's second turn
#: waiting up to 12 s for a place (issue 45). At 3 x their first texts can start up to 3 x `concurrency` streams
#: together; measured with 100 and 300 models, the TTFT error stayed within its bound (docs/operations.md).
LANE_FACTOR = 3


class ProbeQueue:
    """Waiting calls by priority, and the lane of calls to endpoints known slow (module docstring)."""

    def __init__(self) -> None:
        self._heap: list[tuple[Any, int, Hashable, Any]] = []
        self._lane: deque[tuple[Hashable, Any]] = deque()
        self._slow: set[Hashable] = set()
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._heap) + len(self._lane)

    def push(self, priority: Any, endpoint: Hashable, item: Any) -> None:
        """A call to `endpoint` waits (in the lane when the endpoint is known slow)."""
        if endpoint in self._slow:
            self._lane.append((endpoint, item))
        else:
            heapq.heappush(self._heap, (priority, next(self._order), endpoint, item))

    def next(self, counted: int, running: int, limit: int, cap: int, laned: int) -> tuple[Any, bool] | None:
        """The call to start now, and whether it starts parked; None when none may (`counted`: requests running
        that count toward `limit`; `running`: every request running, at most `cap`; `laned`: those started from
        the lane, at most `LANE_FACTOR` x `limit`, so that their first texts, arriving together, never start more
        streams than that at once)."""
        if running >= cap:
            return None
        if self._lane and laned < LANE_FACTOR * limit:
            return self._lane.popleft()[1], True
        if self._heap and counted < limit:
            return heapq.heappop(self._heap)[3], False
        return None

    def parked(self, endpoint: Hashable) -> None:
        """A request to `endpoint` parked: its waiting calls move to the lane, in their order."""
        if endpoint in self._slow:
            return
        self._slow.add(endpoint)
        moved = sorted(entry for entry in self._heap if entry[2] == endpoint)
        if moved:
            self._heap = [entry for entry in self._heap if entry[2] != endpoint]
            heapq.heapify(self._heap)
            self._lane.extend((endpoint, entry[3]) for entry in moved)

    def answered_fast(self, endpoint: Hashable) -> None:
        """A request to `endpoint` had its first text before it would park: not known slow any more."""
        self._slow.discard(endpoint)

    def is_slow(self, endpoint: Hashable) -> bool:
        return endpoint in self._slow
