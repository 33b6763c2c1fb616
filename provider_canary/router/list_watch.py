"""A list that is missing at the router's start is what a fresh install has until the canary's first round: the
start log says "waiting for the canary's first round" (provider_canary/router/ignore.py `report`). This loop looks again
once a canary interval (`router.canary_interval_s`) has passed: a list still missing then is an ERROR (once per list),
and a list that appears is one INFO line.

    task = asyncio.create_task(watch_missing(lambda: ignore.statuses(routes), settings.canary_interval_s))
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from provider_canary.router.ignore import ListStatus, missing_error

log = logging.getLogger("router.ignore")


def missing_now(statuses: Sequence[ListStatus]) -> set[tuple[str, int]]:
    return {(s.route, s.tier) for s in statuses if not s.exists}


async def watch_missing(statuses: Callable[[], Sequence[ListStatus]], interval_s: float) -> None:
    """Every `interval_s` while some list that was missing at the start is still missing: ERROR once for each list
    still missing after the first interval, INFO when one appears; returns when every list is there."""
    waiting = missing_now(statuses())
    said: set[tuple[str, int]] = set()
    while waiting:
        await asyncio.sleep(interval_s)
        now = statuses()
        for s in now:
            key = (s.route, s.tier)
            if key not in waiting:
                continue
            if s.exists:
                log.info("route %s tier %d: the canary's ignore list %s is there now (%d entries)", s.route, s.tier,
                         s.path, s.entries)
                waiting.discard(key)
            elif key not in said:
                missing_error(s)
                said.add(key)
