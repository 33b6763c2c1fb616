"""The alerts outbox as tests set it up and read it back (real DuckDB, the store's own functions)."""

from __future__ import annotations

from typing import Any

from tasks import store
from tasks.core.types import Alert


def enqueue(db: str, alerts: list[Alert]) -> int:
    """Queue `alerts` in the outbox of `db`; how many were new."""
    with store.open_store(db, snapshot=False) as con:
        return store.enqueue_alerts(con, alerts)


def rows(db: str) -> dict[str, dict[str, Any]]:
    """Every outbox row of `db`, by key."""
    with store.open_store(db, snapshot=False) as con:
        return {r["key"]: r for r in store.alert_rows(con).to_dict("records")}
