"""The round's budget step (the shell around tasks/core/budget.py): read the projected spend, decide the
footprint. It reads the analysts' snapshot, which never waits for the store's lock; whatever goes wrong
(no snapshot yet, an older schema, a bug) costs nothing but the reduction: the round probes in full."""

from __future__ import annotations

import logging
from datetime import datetime

from tasks.config import CanaryConfig
from tasks.core.budget import FULL, Footprint, Projection, footprint, last_round_statuses
from tasks.core.settle import Prior

log = logging.getLogger("canary")


def projected_spend(cfg: CanaryConfig, now: datetime, fallback: str) -> Projection | None:
    """The projected daily spend from the analysts' snapshot; None (logged, saying `fallback`) when it cannot be
    read: the budget must never cost the canary its probes."""
    from tasks.store import open_snapshot
    from tasks.store.costs import read_projection

    try:
        con = open_snapshot(cfg.db_path)
        try:
            return read_projection(con, now, cfg.interval_min, cfg.models)
        finally:
            con.close()
    except Exception as exc:
        log.warning("budget: no spend projection (%s: %s); %s", type(exc).__name__,
                    str(exc).splitlines()[0] if str(exc) else "", fallback)
        return None


def plan_footprint(cfg: CanaryConfig, prior: Prior, model: str, round_ts: datetime) -> Footprint:
    """The footprint of this round of `model`: full unless the projected daily spend exceeds the budget."""
    if cfg.budget_usd_per_day <= 0:
        return FULL
    projection = projected_spend(cfg, round_ts, f"probing {model} in full")
    if projection is None:
        return FULL
    fp = footprint(projection, cfg.budget_usd_per_day, prior.states, last_round_statuses(prior.previous_results),
                   model=model, now=round_ts, keep=frozenset(cfg.refusal_controls))
    if fp.is_reduced:
        log.warning("budget: %s; %s skips language confirmations and %d healthy endpoints (%s)", fp.evidence,
                    model, len(fp.skip_tags), ", ".join(sorted(fp.skip_tags)) or "none")
    return fp
