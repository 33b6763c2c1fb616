"""The rows a `canary at` report is built from (tasks/at/): one read per table or view, any store connection
(the live file in a read window, or the analysts' snapshot)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pandas as pd

#: How far before the window `failing_since` looks for the start of a failing run.
LOOKBACK = timedelta(days=7)


def models_with_rounds(con: Any) -> list[str]:
    """Every model with a round in the store, in name order."""
    return [r[0] for r in con.execute("SELECT DISTINCT model FROM rounds ORDER BY 1").fetchall()]


def fetch_report_inputs(con: Any, model: str, since: datetime, until: datetime) -> dict[str, pd.DataFrame]:
    """The rows `tasks.at.build_report` needs, from any store connection (live file or snapshot)."""
    window = [model, since, until]

    def df(sql: str, params: list[Any]) -> pd.DataFrame:
        frame: pd.DataFrame = con.execute(sql, params).df()
        return frame

    outcomes_sql = (
        "SELECT o.*, r.round_ts FROM outcomes o JOIN rounds r USING (round_id)"
        " WHERE o.model = ? AND r.round_ts BETWEEN ? AND ? ORDER BY r.round_ts, o.tag, o.contract"
    )
    return {
        "endpoint_rounds": df(
            "SELECT round_id, round_ts, tag, provider_name, status, fail_reasons FROM v_endpoint_rounds"
            " WHERE model = ? AND round_ts BETWEEN ? AND ? ORDER BY round_ts, tag",
            window,
        ),
        "outcomes": df(outcomes_sql, window),
        "attempts": df(
            "SELECT a.round_id, a.tag, a.contract, a.attempt_no, a.excerpt, a.error_detail FROM v_attempts a"
            " WHERE a.model = ? AND a.round_ts BETWEEN ? AND ? AND a.outcome IS DISTINCT FROM 'pass'",
            window,
        ),
        "suspensions": df("SELECT * FROM v_suspensions WHERE model = ? AND started_at <= ?", [model, until]),
        "decisions": df(
            "SELECT * FROM decisions WHERE model = ? AND decided_at BETWEEN ? AND ? ORDER BY decided_at, tag",
            window,
        ),
        "exclusions": df(
            "SELECT * FROM exclusions WHERE model IS NULL OR model = ? ORDER BY added_at", [model]
        ),
        "lookback": df(
            "SELECT round_ts, tag, status FROM v_endpoint_rounds WHERE model = ? AND round_ts BETWEEN ? AND ?"
            " ORDER BY round_ts, tag",
            [model, since - LOOKBACK, since + (until - since) / 2],
        ),
        "route_events": df(
            "SELECT * FROM route_events WHERE model = ? AND event_at BETWEEN ? AND ? ORDER BY event_at",
            window,
        ),
        "suspicions": df(
            "SELECT * FROM suspicions WHERE model = ? AND detected_at BETWEEN ? AND ? ORDER BY detected_at, tag",
            window,
        ),
    }
