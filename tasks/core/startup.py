"""`canary serve`'s first cycle (pure): at once, or on the schedule.

A served cycle's schedule first fires one interval after `canary serve` starts (Prefect anchors an interval
schedule at its creation). A database with no complete full round of a configured model, or whose newest one is
older than an interval (the canary was down), would leave that model unjudged until then, and its ignore list as
old as that round. So `canary serve` runs one cycle at once in those cases, and otherwise leaves the first one to
the schedule: restarting a healthy canary costs no extra cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta


def startup_cycle_reason(last_full: Mapping[str, datetime | None], now: datetime, interval: timedelta) -> str | None:
    """Why a cycle runs as soon as `canary serve` starts, or None when every model's newest complete full round
    is at most `interval` old at `now`. `last_full`: per configured model, the round time of its newest complete
    full (not confirmation) round, None when it has none (or there is no database yet)."""
    never = sorted(m for m, ts in last_full.items() if ts is None)
    if never:
        return f"no complete full round of {_names(never)} yet"
    stale = sorted(((now - ts, m) for m, ts in last_full.items() if ts is not None and now - ts > interval),
                   reverse=True)
    if not stale:
        return None
    age, model = stale[0]
    return (f"the newest complete full round of {model} is {_minutes(age)} old, more than the {_minutes(interval)}"
            " interval")


def _names(models: list[str], shown: int = 3) -> str:
    more = len(models) - shown
    return ", ".join(models[:shown]) + (f" and {more} more" if more > 0 else "")


def _minutes(span: timedelta) -> str:
    minutes = span.total_seconds() / 60
    return f"{minutes:.0f} min" if minutes >= 1 else f"{span.total_seconds():.0f} s"
