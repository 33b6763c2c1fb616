"""The alerts outbox: one row per Alert.key, ever; the sender marks rows sent or failed.

Lifecycle: ``pending`` (attempts 0) -> failed tries keep it ``pending`` with ``attempts``+1, ``last_error``
and ``next_attempt_at`` -> ``sent`` (``sent_at``). A row is never deleted and never sent twice. Errors are
redacted and flattened before they are stored: a token never reaches the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from tasks.store.rows import Connection, fetch_dicts, insert_rows, one_line, redact, utc, utc_required
from tasks.types import Alert


def enqueue_alerts(con: Connection, alerts: Sequence[Alert]) -> int:
    """Queue alerts; a key already queued (in any state) is skipped. Returns how many were new."""
    unique = {a.key: a for a in alerts}
    rows = [
        {
            "key": a.key,
            "created_at": utc(a.created_at),
            "kind": a.kind,
            "model": a.model,
            "tag": a.tag,
            "text": redact(a.text) or "",
            "blocks_json": redact(a.blocks_json) or "[]",
            "status": "pending",
            "attempts": 0,
        }
        for a in unique.values()
    ]
    return insert_rows(con, "alerts", rows, skip_existing=True)


def pending_alerts(con: Connection, limit: int = 50, *, now: datetime | None = None) -> list[Alert]:
    """Unsent alerts, oldest first. With ``now``, only those whose retry time has come."""
    sql = "SELECT * FROM alerts WHERE status = 'pending'"
    params: list[object] = []
    if now is not None:
        sql += " AND (next_attempt_at IS NULL OR next_attempt_at <= ?)"
        params.append(utc(now))
    rows = fetch_dicts(con, sql + " ORDER BY created_at, key LIMIT ?", [*params, max(0, int(limit))])
    return [_from_row(r) for r in rows]


def mark_alert_sent(con: Connection, key: str, at: datetime) -> bool:
    """Mark ``key`` sent (counts the attempt); False when unknown or already sent."""
    rows = con.execute(
        "UPDATE alerts SET status = 'sent', sent_at = ?, last_attempt_at = ?, attempts = attempts + 1,"
        " next_attempt_at = NULL WHERE key = ? AND status = 'pending' RETURNING key",
        [utc(at), utc(at), key],
    ).fetchall()
    return bool(rows)


def mark_alert_failed(
    con: Connection, key: str, at: datetime, error: str, retry_after_s: float | None = None
) -> bool:
    """Record a failed send: attempts+1, ``last_error`` (redacted, one line), retry not before
    ``at + retry_after_s`` (immediately when None). False when unknown or already sent."""
    at_utc = utc_required(at)
    next_at = at_utc + timedelta(seconds=max(0.0, retry_after_s)) if retry_after_s is not None else at_utc
    rows = con.execute(
        "UPDATE alerts SET attempts = attempts + 1, last_error = ?, last_attempt_at = ?, next_attempt_at = ?"
        " WHERE key = ? AND status = 'pending' RETURNING key",
        [one_line(error, 500), at_utc, next_at, key],
    ).fetchall()
    return bool(rows)


def alert_rows(
    con: Connection, *, status: str | None = None, kind: str | None = None, model: str | None = None
) -> pd.DataFrame:
    """The outbox as a DataFrame (every column), oldest first."""
    clauses, params = [], []
    for clause, value in (("status = ?", status), ("kind = ?", kind), ("model = ?", model)):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    where = " AND ".join(clauses) or "TRUE"
    return con.execute(f"SELECT * FROM alerts WHERE {where} ORDER BY created_at, key", params).df()


def _from_row(r: dict[str, Any]) -> Alert:
    return Alert(
        key=r["key"],
        created_at=r["created_at"],
        kind=r["kind"],
        model=r["model"],
        tag=r["tag"],
        text=r["text"],
        blocks_json=r["blocks_json"],
    )
