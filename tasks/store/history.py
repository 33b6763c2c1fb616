"""Reads over landed rounds. Only ``complete`` rounds are ever judged or replayed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from tasks.core.types import Attempt, Contract, ContractResult, Outcome
from tasks.store.records import attempt_from_row, outcome_from_row
from tasks.store.rows import Connection, fetch_dicts, fetch_first, utc


def complete_rounds(
    con: Connection, *, model: str | None = None, since: datetime | None = None, until: datetime | None = None
) -> pd.DataFrame:
    """Complete rounds only (crashed and running ones are never judged), oldest first."""
    where, params = _round_filter(model, since, until)
    return con.execute(
        f"SELECT * FROM rounds WHERE status = 'complete' {where} ORDER BY round_ts, round_id", params
    ).df()


def latest_complete_rounds(
    con: Connection, model: str, *, before: datetime
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The newest complete round of `model` before `before`, and the newest full (not partial) one: the same
    round unless the newest is a confirmation round, which lists only the endpoints it probed. Reads one or
    two rows whatever the length of the history (a round used to read them all)."""
    sql = ("SELECT * FROM rounds WHERE status = 'complete' AND model = ? AND round_ts < ? {}"
           " ORDER BY round_ts DESC, round_id DESC LIMIT 1")
    params: list[object] = [model, utc(before)]
    rows = fetch_dicts(con, sql.format(""), params)
    last = rows[0] if rows else None
    if last is None or not last.get("partial"):
        return last, last
    full = fetch_dicts(con, sql.format("AND NOT coalesce(partial, FALSE)"), params)
    return last, (full[0] if full else None)


def round_rows(con: Connection, *, model: str | None = None) -> pd.DataFrame:
    """Every round in any state, oldest first (status pages, crash forensics)."""
    where, params = _round_filter(model, None, None)
    return con.execute(f"SELECT * FROM rounds WHERE TRUE {where} ORDER BY round_ts, round_id", params).df()


def round_status_history(
    con: Connection, *, model: str | None = None, since: datetime | None = None, until: datetime | None = None
) -> pd.DataFrame:
    """Endpoint round statuses of complete rounds: round_ts, model, tag, status (+ round_id, discovered, and
    the mode the round ran in).

    The replay input (docs/design.md "Replay input", tasks.core.replay_input.build_replay_lines), round then tag order.
    """
    where, params = _round_filter(model, since, until)
    return con.execute(
        "SELECT round_ts, model, tag, status, round_id, discovered, mode FROM v_endpoint_rounds"
        f" WHERE round_state = 'complete' {where} ORDER BY round_ts, round_id, tag",
        params,
    ).df()


def attempts_of_round(con: Connection, round_id: str) -> list[Attempt]:
    """The landed attempts of one round, as records (e.g. to judge a landed round again)."""
    rows = fetch_dicts(con, "SELECT * FROM attempts WHERE round_id = ? ORDER BY attempt_id", [round_id])
    return [attempt_from_row(r) for r in rows]


def outcomes_of_round(con: Connection, round_id: str) -> list[ContractResult]:
    rows = fetch_dicts(con, "SELECT * FROM outcomes WHERE round_id = ? ORDER BY tag, contract", [round_id])
    return [outcome_from_row(r) for r in rows]


def latest_outcomes(con: Connection, model: str, contract: Contract | str) -> dict[str, ContractResult]:
    """Per tag, ``contract``'s outcome in the latest complete round that judged it."""
    rows = fetch_dicts(
        con,
        "WITH latest AS (SELECT o.tag, arg_max(o.round_id, (r.round_ts, r.round_id)) AS round_id"
        "  FROM outcomes o JOIN rounds r USING (round_id)"
        "  WHERE r.status = 'complete' AND o.model = ? AND o.contract = ? GROUP BY o.tag)"
        " SELECT o.* FROM outcomes o JOIN latest USING (tag, round_id) WHERE o.contract = ?",
        [model, str(contract), str(contract)],
    )
    return {r["tag"]: outcome_from_row(r) for r in rows}


def last_language_outcomes(con: Connection, model: str) -> dict[str, tuple[str, Outcome]]:
    """Per tag, (language, outcome) of its language contract in the latest complete round (the rotation)."""
    return {
        tag: (r.language, r.outcome)
        for tag, r in latest_outcomes(con, model, Contract.LANGUAGE).items()
        if r.language is not None
    }


def _round_filter(
    model: str | None, since: datetime | None, until: datetime | None
) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    for clause, value in (("model = ?", model), ("round_ts >= ?", utc(since)), ("round_ts < ?", utc(until))):
        if value is not None:
            clauses.append(f"AND {clause}")
            params.append(value)
    return " ".join(clauses), params


def recent_rounds(con: Connection, models: list[str], *, per_model: int = 3) -> list[dict[str, object]]:
    """The latest rounds of each model (newest first): id, status, the step a crashed or failed one reached and
    its error, whether it was deferred (spooled and landed later), and its attempt count; timestamps as ISO
    strings."""
    if not models:
        return []
    rows = fetch_dicts(
        con,
        "SELECT round_id, model, round_ts, status, step, error, coalesce(deferred, false) AS deferred, attempt_count"
        " FROM rounds WHERE list_contains(?, model)"
        " QUALIFY row_number() OVER (PARTITION BY model ORDER BY round_ts DESC) <= ? ORDER BY model, round_ts DESC",
        [models, per_model],
    )
    return [{**r, "round_ts": r["round_ts"].isoformat()} for r in rows]


def possible_duplicate_alerts(con: Connection) -> int:
    """Alerts that may have reached Slack twice (reposted while an earlier post's fate was unknown)."""
    row = fetch_first(con, "SELECT coalesce(sum(possible_duplicates), 0) FROM alerts")
    return int(row[0]) if row else 0


@dataclass(frozen=True, slots=True)
class RoundView:
    """One landed round as the demo prints it: its cells, the endpoints' statuses and streaks, its decisions
    and the alerts it raised."""

    round_ts: datetime
    outcomes: list[tuple[str, str, str, str]]  # (tag, contract, outcome, reason), by tag
    statuses: dict[str, str]  # tag -> the endpoint's round status
    streaks: dict[str, tuple[int, int, datetime | None]]  # tag -> (fail streak, clean streak, suspended until)
    decisions: list[tuple[str, str, datetime | None, str | None]]  # (action, tag, until, reason), by tag
    alerts: list[tuple[str, str]]  # (kind, text) of the alerts the round raised


def round_view(con: Connection, round_id: str, model: str) -> RoundView:
    row = con.execute("SELECT round_ts FROM rounds WHERE round_id = ?", [round_id]).fetchone()
    if row is None:
        raise ValueError(f"no round {round_id!r} in the store")
    round_ts = row[0]
    outcomes = con.execute(
        "SELECT tag, contract, outcome, reason FROM outcomes WHERE round_id = ? ORDER BY tag", [round_id]
    ).fetchall()
    statuses = dict(con.execute("SELECT tag, status FROM endpoint_rounds WHERE round_id = ?", [round_id]).fetchall())
    streaks = {r[0]: (r[1], r[2], r[3]) for r in con.execute(
        "SELECT tag, fail_streak, clean_streak, suspended_until FROM endpoint_state WHERE model = ?", [model]
    ).fetchall()}
    decisions = con.execute(
        "SELECT action, tag, until, reason FROM decisions WHERE round_id = ? ORDER BY tag", [round_id]
    ).fetchall()
    alerts = con.execute(
        "SELECT kind, text FROM alerts WHERE model = ? AND created_at = ? ORDER BY kind, tag", [model, round_ts]
    ).fetchall()
    return RoundView(round_ts, outcomes, statuses, streaks, decisions, alerts)


def last_complete_ts(con: Connection, model: str, before: datetime | None = None) -> datetime | None:
    """The round time of `model`'s latest complete round (strictly before `before`, when given)."""
    sql = "SELECT max(round_ts) FROM rounds WHERE status = 'complete' AND model = ?"
    params: list[object] = [model]
    if before is not None:
        sql += " AND round_ts < ?"
        params.append(before)
    row = con.execute(sql, params).fetchone()
    return row[0] if row else None


def models_of(con: Connection) -> list[str]:
    """The models this database holds (a round, a policy state or a decision of theirs), sorted: a shard's own."""
    rows = con.execute(
        "SELECT model FROM rounds UNION SELECT model FROM endpoint_state UNION SELECT model FROM decisions ORDER BY 1"
    ).fetchall()
    return [str(r[0]) for r in rows]


def known_tags(con: Connection, model: str) -> list[str]:
    """The endpoints discovered by the model's newest complete full round (for admin changes made between
    rounds). A confirmation round lists only the endpoints it re-probed, and a running or crashed round may
    list none, so neither stands for the discovery."""
    rows = con.execute(
        "SELECT tag FROM round_endpoints WHERE round_id = (SELECT round_id FROM rounds WHERE model = ?"
        " AND status = 'complete' AND NOT coalesce(partial, FALSE)"
        " ORDER BY round_ts DESC, round_id DESC LIMIT 1) ORDER BY tag",
        [model],
    ).fetchall()
    return [r[0] for r in rows]
