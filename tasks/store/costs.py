"""Reads of what the canary spent (the cost views of migration 6): per day and model, and the projection
the daily budget compares with `budget_usd_per_day` (tasks/core/budget.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any

from tasks.core.budget import Projection, project
from tasks.core.cost import CostTotals
from tasks.store.rows import Connection, utc_required

_TOTALS = (
    "requests, prompt_tokens, completion_tokens, tokens, reported_usd, estimated_usd, estimated_requests,"
    " unpriced_requests"
)


def _totals(row: Sequence[Any]) -> CostTotals:
    requests, prompt, completion, tokens, reported, estimated, n_estimated, n_unpriced = row[:8]
    return CostTotals(
        requests=int(requests or 0), prompt_tokens=int(prompt or 0), completion_tokens=int(completion or 0),
        tokens=int(tokens or 0), reported_usd=float(reported or 0), estimated_usd=float(estimated or 0),
        estimated_requests=int(n_estimated or 0), unpriced_requests=int(n_unpriced or 0),
    )


def daily_costs(con: Connection, first_day: date, last_day: date) -> dict[tuple[date, str], CostTotals]:
    """(UTC day, model) -> what its rounds spent, for the days in [first_day, last_day]."""
    rows = con.execute(
        f"SELECT day, model, {_TOTALS} FROM v_daily_costs WHERE day BETWEEN ? AND ? ORDER BY day, model",
        [first_day, last_day],
    ).fetchall()
    return {(r[0], r[1]): _totals(r[2:]) for r in rows}


def read_projection(
    con: Connection, now: datetime, interval_min: int, models: Sequence[str] | None = None
) -> Projection:
    """The spend of rounds in the 24 hours up to `now`; each model's (of `models`, default all) last full round
    before `now` x rounds per day, with the language confirmations' part of the latter; and the confirmation
    (partial) rounds' spend of those 24 hours. A confirmation round probes a few endpoints: taken for a round
    of the schedule, it made the projection today's spend so far."""
    now = utc_required(now)
    wanted = set(models) if models is not None else None
    row = con.execute(
        "SELECT coalesce(sum(cost_usd), 0) FROM v_attempt_costs WHERE round_ts > ? AND round_ts <= ?",
        [now - timedelta(days=1), now],
    ).fetchone()
    last_day = float(row[0]) if row else 0.0
    partial = con.execute(
        "SELECT c.model, coalesce(sum(c.cost_usd), 0) FROM v_attempt_costs c JOIN rounds r USING (round_id)"
        " WHERE r.partial AND c.round_ts > ? AND c.round_ts <= ? GROUP BY c.model",
        [now - timedelta(days=1), now],
    ).fetchall()
    partial_usd = sum(float(usd or 0) for m, usd in partial if wanted is None or m in wanted)
    last = con.execute(
        """
        WITH latest AS (
            SELECT c.model, c.round_id, c.cost_usd FROM v_round_costs c JOIN rounds r USING (round_id)
            WHERE c.round_ts <= ? AND NOT coalesce(r.partial, false)
            QUALIFY row_number() OVER (PARTITION BY c.model ORDER BY c.round_ts DESC) = 1
        )
        SELECT l.model, l.cost_usd,
               coalesce((SELECT sum(c.cost_usd) FROM v_attempt_costs c
                         WHERE c.round_id = l.round_id AND c.contract = 'language' AND c.attempt_no >= 2), 0)
        FROM latest l
        """,
        [now],
    ).fetchall()
    rounds = {m: float(usd or 0) for m, usd, _ in last if wanted is None or m in wanted}
    confirmations = {m: float(c or 0) for m, _, c in last if wanted is None or m in wanted}
    return project(last_day, rounds, confirmations, interval_min, partial_rounds_usd=partial_usd)
