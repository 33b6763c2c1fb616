"""Operational exclusions with their full history: rows are never deleted.

A removal stamps ``removed_at/removed_by/removed_reason`` on the active row. Adding a (tag, model) that is
already active supersedes the old row (it is closed with reason ``superseded``), so at most one row per
(tag, model) is open at a time. ``model`` NULL means every model.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

from tasks.core.types import OperationalExclusion
from tasks.store.rows import Connection, fetch_dicts, fetch_first, one_line, transaction, utc, utc_required

_OPEN = "removed_at IS NULL AND tag = ? AND model IS NOT DISTINCT FROM ?"


def add_exclusion(con: Connection, excl: OperationalExclusion) -> int:
    """Add an operational exclusion; returns its ``exclusion_id``.

    Adding the same (tag, model, added_at) again is a no-op that returns the existing id.
    """
    added_at = utc_required(excl.added_at)
    with transaction(con):
        same = fetch_first(
            con,
            f"SELECT exclusion_id FROM exclusions WHERE {_OPEN} AND added_at = ?",
            [excl.tag, excl.model, added_at],
        )
        if same:
            return int(same[0])
        con.execute(
            "UPDATE exclusions SET removed_at = ?, removed_by = ?, removed_reason = 'superseded'"
            f" WHERE {_OPEN}",
            [added_at, one_line(excl.who), excl.tag, excl.model],
        )
        row = fetch_first(
            con,
            "INSERT INTO exclusions (tag, model, reason, who, added_at, until)"
            " VALUES (?, ?, ?, ?, ?, ?) RETURNING exclusion_id",
            [
                excl.tag,
                excl.model,
                one_line(excl.reason) or "",
                one_line(excl.who) or "",
                added_at,
                utc(excl.until),
            ],
        )
    assert row is not None
    return int(row[0])


def remove_exclusion(
    con: Connection, tag: str, model: str | None, who: str, reason: str, at: datetime
) -> int:
    """Close the open exclusion of (tag, model); returns how many rows were closed (0: nothing open)."""
    rows = con.execute(
        f"UPDATE exclusions SET removed_at = ?, removed_by = ?, removed_reason = ? WHERE {_OPEN}"
        " RETURNING exclusion_id",
        [utc(at), one_line(who), one_line(reason), tag, model],
    ).fetchall()
    return len(rows)


def active_exclusions(
    con: Connection, now: datetime, *, model: str | None = None
) -> list[OperationalExclusion]:
    """Exclusions in force at ``now``: not removed and not expired (``until`` > now).

    With ``model``, only those that apply to it (its own and the every-model ones).
    """
    sql = "SELECT * FROM exclusions WHERE removed_at IS NULL AND (until IS NULL OR until > ?)"
    params: list[object] = [utc(now)]
    if model is not None:
        sql += " AND (model IS NULL OR model = ?)"
        params.append(model)
    rows = fetch_dicts(con, sql + " ORDER BY tag, model NULLS FIRST, added_at", params)
    return [_from_row(r) for r in rows]


def exclusions_as_of(con: Connection, at: datetime, *, model: str | None = None) -> list[OperationalExclusion]:
    """Exclusions that were in force at ``at`` by the table's history: added by then, not yet removed, not
    expired (what `canary export-history` writes for replay)."""
    sql = ("SELECT * FROM exclusions WHERE added_at <= ? AND (removed_at IS NULL OR removed_at > ?)"
           " AND (until IS NULL OR until > ?)")
    params: list[object] = [utc(at), utc(at), utc(at)]
    if model is not None:
        sql += " AND (model IS NULL OR model = ?)"
        params.append(model)
    return [_from_row(r) for r in fetch_dicts(con, sql + " ORDER BY tag, model NULLS FIRST, added_at", params)]


def exclusion_history(con: Connection, *, tag: str | None = None, model: str | None = None) -> pd.DataFrame:
    """Every exclusion row ever added, with its removal (if any), oldest first."""
    sql, params = "SELECT * FROM exclusions WHERE TRUE", list[object]()
    if tag is not None:
        sql, params = sql + " AND tag = ?", [*params, tag]
    if model is not None:
        sql, params = sql + " AND (model IS NULL OR model = ?)", [*params, model]
    return con.execute(sql + " ORDER BY added_at, exclusion_id", params).df()


def _from_row(r: dict[str, Any]) -> OperationalExclusion:
    return OperationalExclusion(
        tag=r["tag"],
        reason=r["reason"],
        who=r["who"],
        added_at=r["added_at"],
        model=r["model"],
        until=r["until"],
    )
