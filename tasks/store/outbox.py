"""The alerts outbox: one row per Alert.key, ever; the sender marks rows sent or failed.

Lifecycle: ``pending`` (attempts 0) -> claimed for a post (``sending_since`` set, ``claimed_by`` the claiming
process, ``attempts``+1, committed BEFORE the post) -> ``sent`` (``sent_at``), or back to plain ``pending``
with ``last_error`` and ``next_attempt_at`` when Slack said no for now (5xx, 429, unreachable), or ``failed``
(``failed_at``, ``last_error``) when Slack refused it for a reason no retry can fix: never claimed again.
When the post's fate is unknown (the process died during it, or Slack answered after our timeout)
``sending_since`` stays set: the next delivery asks Slack's channel history for the alert's key before posting
again, and counts ``possible_duplicates`` where it cannot ask (tasks/alerts/delivery.py).
A row is never deleted. Errors are redacted and flattened before they are stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from tasks.core.types import Alert
from tasks.runtime.secrets import redact_known_secrets_opt
from tasks.store.rows import Connection, fetch_dicts, insert_rows, one_line, utc, utc_required


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
            "text": redact_known_secrets_opt(a.text) or "",
            "blocks_json": redact_known_secrets_opt(a.blocks_json) or "[]",
            "status": "pending",
            "attempts": 0,
            "thread_key": a.thread_key,
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
    return [alert_from_row(r) for r in rows]


#: A claim older than this is an unknown fate (its process died or timed out), not a post in flight.
CLAIM_LEASE = timedelta(seconds=60)


def claim_alerts(
    con: Connection, now: datetime, limit: int = 50, *, claimer: str | None = None,
    is_dead: Callable[[str | None], bool] = lambda _claimer: False,
) -> list[tuple[Alert, bool]]:
    """Claim the alerts to post now, oldest first: (alert, fate_unknown). Due pending alerts, and alerts whose
    earlier claim is older than CLAIM_LEASE or was made by a process that `is_dead` (tasks/runtime/liveness.py) says is
    gone; each is stamped ``sending_since = now``, ``claimed_by = claimer``, attempts + 1."""
    at = utc_required(now)
    rows = fetch_dicts(
        con,
        "SELECT *, sending_since IS NOT NULL AS unknown FROM alerts WHERE status = 'pending' AND ("
        " (sending_since IS NULL AND (next_attempt_at IS NULL OR next_attempt_at <= ?))"
        " OR sending_since <= ? OR (sending_since IS NOT NULL AND claimed_by IS NOT NULL))"
        " ORDER BY created_at, key",
        [at, at - CLAIM_LEASE],
    )
    lease_end = at - CLAIM_LEASE
    rows = [r for r in rows if r["sending_since"] is None or r["sending_since"] <= lease_end
            or is_dead(r["claimed_by"])]
    rows = _after_parents(con, rows)[: max(0, int(limit))]
    for r in rows:
        con.execute(
            "UPDATE alerts SET sending_since = ?, claimed_by = ?, attempts = attempts + 1, last_attempt_at = ?"
            " WHERE key = ?",
            [at, claimer, at, r["key"]],
        )
    return [(alert_from_row(r), bool(r["unknown"])) for r in rows]


def _after_parents(con: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` less the follow-ups whose parent still waits to be posted and is not claimed before them: a
    follow-up goes in its parent's thread, so it waits for the parent (tasks/alerts/threads.py)."""
    parents = sorted({str(r["thread_key"]) for r in rows if r.get("thread_key")})
    if not parents:
        return rows
    waiting = {str(r["key"]) for r in fetch_dicts(
        con, "SELECT key FROM alerts WHERE status = 'pending' AND key IN (SELECT unnest(?::VARCHAR[]))", [parents])}
    out, taken = [], set()
    for r in rows:
        if r.get("thread_key") in waiting and r["thread_key"] not in taken:
            continue
        out.append(r)
        taken.add(r["key"])
    return out


def record_delivery(
    con: Connection, key: str, at: datetime, *, sent: bool, error: str | None = None,
    retry_after_s: float | None = None, unknown: bool = False, reposted_unknown: bool = False,
    attempted: bool = True, permanent: bool = False,
) -> None:
    """Record a claimed alert's result: sent; refused for now (retry at ``at + retry_after_s``); ``permanent``
    (refused for good: status ``failed``, never claimed again); or ``unknown`` (the post may have landed:
    stays claimed for the next delivery's history check).
    ``reposted_unknown``: this post repeated one whose fate was unknown (a possible duplicate).
    ``attempted`` False: the claim was handed back untried (the batch stopped), so it does not count."""
    at_utc = utc_required(at)
    dup = 1 if reposted_unknown else 0
    if not attempted:
        con.execute("UPDATE alerts SET attempts = attempts - 1 WHERE key = ? AND status = 'pending'", [key])
    if permanent and not sent:
        con.execute(
            "UPDATE alerts SET status = 'failed', failed_at = ?, sending_since = NULL, claimed_by = NULL,"
            " next_attempt_at = NULL, last_error = ? WHERE key = ? AND status = 'pending'",
            [at_utc, one_line(error, 500), key],
        )
        return
    if sent:
        con.execute(
            "UPDATE alerts SET status = 'sent', sent_at = ?, sending_since = NULL, claimed_by = NULL,"
            " next_attempt_at = NULL,"
            " possible_duplicates = coalesce(possible_duplicates, 0) + ? WHERE key = ? AND status = 'pending'",
            [at_utc, dup, key],
        )
    elif unknown:
        con.execute(
            "UPDATE alerts SET last_error = ?, possible_duplicates = coalesce(possible_duplicates, 0) + ?"
            " WHERE key = ? AND status = 'pending'",
            [one_line(error, 500), dup, key],
        )
    else:
        next_at = at_utc + timedelta(seconds=max(0.0, retry_after_s or 0.0))
        con.execute(
            "UPDATE alerts SET sending_since = NULL, claimed_by = NULL, last_error = ?, next_attempt_at = ?,"
            " possible_duplicates = coalesce(possible_duplicates, 0) + ? WHERE key = ? AND status = 'pending'",
            [one_line(error, 500), next_at, dup, key],
        )


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


def alert_health(con: Connection) -> dict[str, Any]:
    """What `canary status` says about the outbox: alerts refused for good (count, the latest one) and alerts
    still waiting (count, the oldest)."""
    failed = fetch_dicts(
        con, "SELECT count(*) OVER () AS n, key, kind, model, tag, last_error, failed_at FROM alerts"
        " WHERE status = 'failed' ORDER BY failed_at DESC, key LIMIT 1",
    )
    pending = fetch_dicts(
        con, "SELECT count(*) AS n, min(created_at) AS oldest FROM alerts WHERE status = 'pending'",
    )
    last = failed[0] if failed else None
    return {
        "failed": int(last["n"]) if last else 0,
        "last_failed": None if last is None else {
            "key": last["key"], "kind": last["kind"], "model": last["model"], "tag": last["tag"],
            "error": last["last_error"], "failed_at": last["failed_at"].isoformat() if last["failed_at"] else None,
        },
        "pending": int(pending[0]["n"]) if pending else 0,
        "oldest_pending_at": pending[0]["oldest"].isoformat() if pending and pending[0]["oldest"] else None,
    }


def alert_from_row(r: dict[str, Any]) -> Alert:
    return Alert(
        key=r["key"],
        created_at=r["created_at"],
        kind=r["kind"],
        model=r["model"],
        tag=r["tag"],
        text=r["text"],
        blocks_json=r["blocks_json"],
        thread_key=r.get("thread_key"),
    )
