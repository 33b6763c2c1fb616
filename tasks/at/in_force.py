"""The exclusions in force at a time T, from the store's rows: canary/shadow suspensions and operational ones."""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from tasks.at.frames import cell_text, cell_ts
from tasks.at.records import InForce
from tasks.core.types import Mode, OperationalExclusion


def suspensions_at(suspensions: pd.DataFrame | None, t: datetime) -> list[InForce]:
    """Suspensions in force at t: started at or before t, not yet ended (decision or planned end)."""
    if suspensions is None or suspensions.empty:
        return []
    out: list[InForce] = []
    for r in suspensions.to_dict("records"):
        start, planned, ended = cell_ts(r["started_at"]), cell_ts(r.get("planned_until")), cell_ts(r.get("ended_at"))
        end = min(x for x in (planned, ended) if x is not None) if (planned or ended) else None
        if start is not None and start <= t and (end is None or t < end):
            layer = "canary" if str(r.get("mode")) == Mode.ENFORCE.value else "shadow"
            step = r.get("ladder_step")
            reason = cell_text(r.get("reason")) + (
                f" (ladder step {int(step)})" if step and not pd.isna(step) else ""
            )
            out.append(InForce(str(r["tag"]), layer, reason, start, end))
    return out


def operational_at(exclusions: pd.DataFrame | None, model: str, t: datetime) -> list[OperationalExclusion]:
    if exclusions is None or exclusions.empty:
        return []
    out: list[OperationalExclusion] = []
    for r in exclusions.to_dict("records"):
        added, removed, until = cell_ts(r["added_at"]), cell_ts(r.get("removed_at")), cell_ts(r.get("until"))
        row_model = cell_text(r.get("model")) or None
        if added is None or added > t or (removed is not None and removed <= t):
            continue
        if (until is not None and until <= t) or (row_model is not None and row_model != model):
            continue
        out.append(
            OperationalExclusion(
                str(r["tag"]), cell_text(r.get("reason")), cell_text(r.get("who")), added, row_model, until
            )
        )
    return out
