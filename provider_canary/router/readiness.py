"""Whether the router is ready for traffic (`GET /readyz`), as data (pure; the shell gathers what it reads).

Ready means: the upstream client is open (the app's lifespan ran), every tier's canary list is there and fresh
(provider_canary/router/ignore.py `ListStatus`: a tier with `canary_model = ""` has none and is not asked about), and no
sink is dropping records (a `Batcher` whose buffer is full drops the oldest with each new record: route events or live
counts are being lost). Each failed condition is one reason with what names it. `GET /livez` asks nothing: the
process answers, so it is alive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from provider_canary.router.ignore import ListStatus


@dataclass(frozen=True, slots=True)
class SinkState:
    name: str  # the batcher's name (route-events, live-requests, router-savings...)
    pending: int
    max_buffered: int
    dropped: int  # since the router started


def not_ready(lists: Sequence[ListStatus], sinks: Sequence[SinkState], started: bool) -> list[dict[str, object]]:
    """Why the router is not ready, one object per reason; empty when it is."""
    reasons: list[dict[str, object]] = []
    if not started:
        reasons.append({"reason": "starting", "message": "the router's upstream client is not open yet"})
    for s in lists:
        if not s.exists:
            reasons.append({"reason": "list_missing", "route": s.route, "tier": s.tier, "model": s.model,
                            "path": s.path, "message": "the tier's canary ignore list does not exist"})
        elif s.stale:
            reasons.append({"reason": "list_stale", "route": s.route, "tier": s.tier, "model": s.model,
                            "path": s.path, "age_s": round(s.age_s or 0.0, 1),
                            "message": "the tier's canary ignore list is older than two canary intervals"})
    for sink in sinks:
        if sink.pending >= sink.max_buffered:
            reasons.append({"reason": "sink_dropping", "sink": sink.name, "pending": sink.pending,
                            "dropped": sink.dropped, "message": "the sink's buffer is full: every new record "
                            "pushes out the oldest"})
    return reasons
