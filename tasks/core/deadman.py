"""The dead-man check (pure): which models have had no complete round for two intervals.

A round that crashes is never judged, so a canary that keeps crashing (or a schedule that stopped firing)
looks like silence. Whoever runs next (the next round, `canary status`) asks `overdue_models`. The alert key
is the last complete round's timestamp, so one silence episode raises one alert however often it is asked,
and the next silence (after a new complete round) raises a new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

#: How many missed intervals make a silence: one missed round can be a slow round, two cannot.
SILENT_INTERVALS = 2


@dataclass(frozen=True, slots=True)
class Overdue:
    model: str
    last_complete_ts: datetime | None  # None: no round of this model ever completed
    silent_for: timedelta  # since the last complete round (or since watching began)

    @property
    def key(self) -> str:
        """Idempotency key: one alert per silence episode."""
        last = self.last_complete_ts.astimezone(UTC).isoformat() if self.last_complete_ts else "never"
        return f"deadman|{self.model}|{last}"


def overdue_models(
    last_complete: Mapping[str, datetime | None],
    now: datetime,
    interval: timedelta,
    *,
    watching_since: datetime | None = None,
    grace: timedelta = timedelta(0),
) -> list[Overdue]:
    """Models whose last complete round is older than two intervals (+ grace), in model order.

    A model that never completed a round is overdue once two intervals (+ grace) have passed since
    `watching_since` (when the deployment or the first round started); without it, it cannot be judged.
    """
    if interval <= timedelta(0):
        raise ValueError(f"interval must be positive (got {interval})")
    limit = SILENT_INTERVALS * interval + grace
    overdue = []
    for model in sorted(last_complete):
        last = last_complete[model]
        since = last if last is not None else watching_since
        if since is None:
            continue
        silent_for = now - since
        if silent_for > limit:
            overdue.append(Overdue(model=model, last_complete_ts=last, silent_for=silent_for))
    return overdue
