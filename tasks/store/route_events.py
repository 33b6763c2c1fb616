"""Router failovers and degraded marks (``route_events``), appended by the router."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime

import pandas as pd

from tasks.core.types import RouteEvent
from tasks.runtime.secrets import redact_known_secrets_opt
from tasks.store.connection import open_store
from tasks.store.rows import Connection, insert_rows, one_line, utc


def append_route_events(
    db_path_or_con: str | os.PathLike[str] | Connection, events: Sequence[RouteEvent]
) -> int:
    """Append events; given a path, in its own short write window (no snapshot publish: the next round's
    window publishes them). Returns how many rows were written."""
    if not events:
        return 0
    rows = [
        {
            "event_at": utc(e.at),
            "key": redact_known_secrets_opt(e.key) or "",
            "tier": e.tier,
            "upstream": redact_known_secrets_opt(e.upstream) or "",
            "reason": one_line(e.reason) or "",
            "latency_ms": e.latency_ms,
            "model": e.model,
            "client": e.client,
        }
        for e in events
    ]
    if isinstance(db_path_or_con, str | os.PathLike):
        with open_store(db_path_or_con, snapshot=False) as con:
            return insert_rows(con, "route_events", rows)
    return insert_rows(db_path_or_con, "route_events", rows)


def route_event_rows(
    con: Connection, *, since: datetime | None = None, until: datetime | None = None
) -> pd.DataFrame:
    """Route events, oldest first, optionally within [since, until)."""
    sql, params = "SELECT * FROM route_events WHERE TRUE", list[object]()
    if since is not None:
        sql, params = sql + " AND event_at >= ?", [*params, utc(since)]
    if until is not None:
        sql, params = sql + " AND event_at < ?", [*params, utc(until)]
    return con.execute(sql + " ORDER BY event_at", params).df()
