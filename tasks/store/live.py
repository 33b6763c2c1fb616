"""Live traffic and suspicions (migrations 9 and 12): the router's per-minute counts (attempts and judged
answers), the watcher's triggers, and the listing's signals of each endpoint's latest round."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.core.suspicion import ClearedRate, Signal, Suspicion, SuspicionStatus
from tasks.core.types import Endpoint, RoundStatus
from tasks.runtime.secrets import redact_known_secrets_opt
from tasks.store.connection import open_store
from tasks.store.records import SIGNAL_COLUMNS
from tasks.store.rows import Connection, insert_rows, one_line, utc


def append_live_counts(db_path_or_con: str | os.PathLike[str] | Connection, counts: Sequence[LiveCount]) -> int:
    """Append counts; given a path, in its own short write window (the next round's window publishes them)."""
    if not counts:
        return 0
    rows = [
        {"minute_at": utc(c.minute_at), "model": c.model, "route_key": redact_known_secrets_opt(c.route_key) or "",
         "tier": c.tier, "tag": c.tag, "provider_name": c.provider_name, "outcome": str(c.outcome),
         "requests": c.requests, "quality": str(c.quality) if c.quality is not None else None,
         "reason": one_line(c.reason)}
        for c in counts
    ]
    if isinstance(db_path_or_con, str | os.PathLike):
        with open_store(db_path_or_con, snapshot=False) as con:
            return insert_rows(con, "live_requests", rows)
    return insert_rows(db_path_or_con, "live_requests", rows)


def live_counts(con: Connection, model: str, since: datetime) -> list[LiveCount]:
    """The model's live counts from `since` on (minute buckets starting at or after its minute): attempt rows
    and judged-answer rows (`quality` set) alike."""
    rows = con.execute(
        "SELECT minute_at, model, route_key, tier, tag, provider_name, outcome, quality, reason, "
        "sum(requests)::INTEGER "
        "FROM live_requests WHERE model = ? AND minute_at >= date_trunc('minute', ?::TIMESTAMPTZ) "
        "GROUP BY ALL ORDER BY minute_at", [model, utc(since)]).fetchall()
    out = []
    for minute, m, key, tier, tag, provider, outcome, quality, reason, n in rows:
        try:
            out.append(LiveCount(minute, m, key, int(tier), tag, provider, LiveOutcome(outcome), int(n),
                                 LiveQuality(quality) if quality is not None else None, reason))
        except ValueError:  # an outcome or class this code does not know (a newer router): not counted
            continue
    return out


def record_suspicions(con: Connection, found: Sequence[Suspicion], status: SuspicionStatus,
                      note: str | None = None) -> int:
    rows = [
        {"suspicion_id": s.suspicion_id, "detected_at": utc(s.detected_at), "model": s.model, "tag": s.tag,
         "signal": str(s.signal), "evidence": one_line(s.evidence) or "", "requests": s.requests,
         "failures": s.failures, "failure_rate": s.failure_rate, "uptime_recent": s.uptime_recent,
         "uptime_baseline": s.uptime_baseline, "status": str(status), "note": one_line(note),
         "quality": str(s.quality) if s.quality is not None else None}
        for s in found
    ]
    return insert_rows(con, "suspicions", rows, skip_existing=True) if rows else 0


def last_suspected(con: Connection, model: str) -> dict[str, datetime]:
    """Per tag of `model`, its latest suspicion's time."""
    rows = con.execute("SELECT tag, max(detected_at) FROM suspicions WHERE model = ? GROUP BY tag",
                       [model]).fetchall()
    return {tag: at for tag, at in rows}


def cleared_rates(con: Connection, model: str) -> dict[tuple[str, LiveQuality], ClearedRate]:
    """Per (tag, quality class) of `model`: its latest resolved live quality suspicion, when the probes cleared
    it (the rate they found to be the client's doing: tasks/core/suspicion.py)."""
    rows = con.execute(
        "SELECT tag, quality, status, detected_at, failure_rate FROM suspicions "
        "WHERE model = ? AND signal = ? AND quality IS NOT NULL AND status NOT IN ('scheduled', 'skipped') "
        "QUALIFY row_number() OVER (PARTITION BY tag, quality ORDER BY detected_at DESC) = 1",
        [model, str(Signal.LIVE_QUALITY)]).fetchall()
    out = {}
    for tag, quality, status, at, rate in rows:
        if status == SuspicionStatus.CLEARED and rate is not None and quality in set(LiveQuality):
            out[(tag, LiveQuality(quality))] = ClearedRate(at, float(rate))
    return out


def mark_confirm_round(con: Connection, suspicion_ids: Sequence[str], round_id: str | None,
                       note: str | None = None) -> None:
    for sid in suspicion_ids:
        con.execute("UPDATE suspicions SET confirm_round_id = coalesce(?, confirm_round_id), "
                    "note = coalesce(?, note) WHERE suspicion_id = ?", [round_id, one_line(note), sid])


def resolve_suspicions(con: Connection, now: datetime) -> int:
    """Suspicions still `scheduled` take what the first complete round of their model at or after their
    detection said of their endpoint (their confirmation round, or a full round that came first):
    tasks/core/suspicion.py `resolution`. Returns how many were resolved."""
    from tasks.core.suspicion import resolution

    rows = con.execute(
        "SELECT s.suspicion_id, er.status, r.round_id FROM suspicions s "
        "JOIN rounds r ON r.model = s.model AND r.round_ts >= s.detected_at AND r.status = 'complete' "
        "JOIN endpoint_rounds er ON er.round_id = r.round_id AND er.tag = s.tag "
        "WHERE s.status = 'scheduled' "
        "QUALIFY row_number() OVER (PARTITION BY s.suspicion_id ORDER BY r.round_ts) = 1").fetchall()
    for sid, status, round_id in rows:
        result = resolution(RoundStatus(status))
        con.execute("UPDATE suspicions SET status = ?, round_status = ?, confirm_round_id = ?, resolved_at = ? "
                    "WHERE suspicion_id = ?", [str(result), status, round_id, utc(now), sid])
    return len(rows)


def suspicion_rows(con: Connection, model: str | None = None, *, since: datetime | None = None,
                   until: datetime | None = None) -> pd.DataFrame:
    sql, params = "SELECT * FROM suspicions WHERE TRUE", list[Any]()
    if model is not None:
        sql, params = sql + " AND model = ?", [*params, model]
    if since is not None:
        sql, params = sql + " AND detected_at >= ?", [*params, utc(since)]
    if until is not None:
        sql, params = sql + " AND detected_at < ?", [*params, utc(until)]
    return con.execute(sql + " ORDER BY detected_at, tag", params).df()


def latest_signals(con: Connection, model: str) -> dict[str, dict[str, Any]]:
    """Per tag, the listing's signals (and `status`) in the model's latest complete round that listed it
    (empty for a file older than migration 9, opened read-only)."""
    from tasks.store.migrations import schema_version

    if schema_version(con) < 9:
        return {}
    cols = ", ".join(f"e.{c}" for c in SIGNAL_COLUMNS)
    rows = con.execute(
        f"SELECT e.tag, e.endpoint_status, {cols} FROM round_endpoints e JOIN rounds r USING (round_id) "
        "WHERE r.model = ? AND r.status = 'complete' "
        "QUALIFY row_number() OVER (PARTITION BY e.tag ORDER BY r.round_ts DESC) = 1", [model]).fetchall()
    return {row[0]: dict(zip(("status", *SIGNAL_COLUMNS), row[1:], strict=True)) for row in rows}


def last_round_endpoints(con: Connection, model: str) -> list[Endpoint]:
    """The endpoints of `model`'s newest complete full round, in tag order."""
    rows = con.execute(
        "SELECT e.tag, e.provider_name FROM round_endpoints e JOIN rounds r USING (round_id) "
        "WHERE r.model = ? AND r.status = 'complete' AND NOT coalesce(r.partial, false) "
        "QUALIFY rank() OVER (ORDER BY r.round_ts DESC) = 1 ORDER BY e.tag", [model]).fetchall()
    return [Endpoint(model, tag, provider or "") for tag, provider in rows]


def set_suspicion_status(con: Connection, suspicion_ids: Sequence[str], status: SuspicionStatus, note: str) -> None:
    """Set these suspicions' status, with why (a note of at most 300 characters)."""
    for suspicion_id in suspicion_ids:
        con.execute("UPDATE suspicions SET status = ?, note = ? WHERE suspicion_id = ?",
                    [str(status), note[:300], suspicion_id])
