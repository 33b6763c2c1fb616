"""Writing a settled round: everything it produced in ONE transaction, and the round lifecycle rows.

    with open_store(path) as con:
        save_settlement(con, settlement, landed_at=now)   # attempts, outcomes, statuses, states, decisions,
                                                          # the alerts outbox, the metrics rollup and the
                                                          # round marked complete
A crash anywhere before COMMIT leaves nothing of the round's decisions; after it, all of them with their
alerts queued. Saving the same settlement again (a spool landed twice) replaces the round's rows, never
applies the policy twice (``policy_applied:<model>``) and never queues an alert twice (outbox keys).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from tasks.core.metric_rollup import round_rollup
from tasks.core.types import RoundInfo
from tasks.failpoints import failpoint
from tasks.store.landing import complete_round, land_outcomes, land_round
from tasks.store.metric_rollup import record_round_end, roll_up_round
from tasks.store.outbox import enqueue_alerts
from tasks.store.rows import Connection, fetch_dicts, insert_rows, one_line, transaction, utc
from tasks.store.state import append_decisions, get_setting, replace_policy_states, set_setting

if TYPE_CHECKING:
    from tasks.core.settle import Settlement

#: settings key: the newest round_ts whose decisions are stored, per model.
POLICY_APPLIED_KEY = "policy_applied:{model}"


def policy_applied(con: Connection, model: str) -> datetime | None:
    value = get_setting(con, POLICY_APPLIED_KEY.format(model=model))
    return datetime.fromisoformat(value) if value else None


def save_settlement(con: Connection, s: Settlement, *, landed_at: datetime, deferred: bool = False) -> None:
    """Write the whole settlement of one round in one transaction (see the module docstring)."""
    info = s.info
    model = info.model
    with transaction(con):
        land_round(con, info, list(s.attempts), endpoints=list(s.endpoints), status="running")
        land_outcomes(con, info.round_id, s.results)
        applied = policy_applied(con, model)
        if s.decided and (applied is None or applied < info.round_ts):
            replace_policy_states(con, model, s.state_mode or info.mode, list(s.states.values()))
            append_decisions(con, list(s.decisions))
            set_setting(con, POLICY_APPLIED_KEY.format(model=model), info.round_ts.isoformat(), at=landed_at)
        enqueue_alerts(con, [*s.alerts, *s.extra_alerts])
        roll_up_round(con, round_rollup(info, s.attempts, s.results, s.endpoints))  # what a scrape reads
        failpoint("inside-save")
        complete_round(con, info.round_id, dict(s.statuses), at=landed_at)
        con.execute(
            "UPDATE rounds SET step = 'saved', landed_at = ?, deferred = ?, partial = ? WHERE round_id = ?",
            [utc(landed_at), deferred, info.partial, info.round_id],
        )


def partial_round_ids(con: Connection, model: str | None = None) -> set[str]:
    """Ids of the complete partial (confirmation) rounds, of `model` or all (export-history marks them)."""
    sql = "SELECT round_id FROM rounds WHERE partial AND status = 'complete'"
    rows = con.execute(sql + (" AND model = ?" if model else ""), [model] if model else []).fetchall()
    return {str(r[0]) for r in rows}


def mark_running(con: Connection, info: RoundInfo, *, started_at: datetime) -> None:
    """Record that a round started (status ``running``, step ``probe``), unless it is already stored."""
    exists = con.execute("SELECT 1 FROM rounds WHERE round_id = ?", [info.round_id]).fetchall()
    if exists:
        return
    insert_rows(con, "rounds", [{
        "round_id": info.round_id, "model": info.model, "round_ts": utc(info.round_ts), "mode": str(info.mode),
        "status": "running", "started_at": utc(started_at), "endpoints": [], "endpoint_count": 0,
        "attempt_count": 0, "outcome_count": 0, "step": "probe", "partial": info.partial,
    }])


def unfinished_rounds(con: Connection, model: str, *, besides: str) -> list[dict[str, object]]:
    """Rounds of ``model`` still ``running`` other than ``besides`` (none can be alive: rounds of one
    model never overlap), oldest first."""
    return fetch_dicts(
        con,
        "SELECT round_id, round_ts, mode, step FROM rounds WHERE model = ? AND status = 'running'"
        " AND round_id <> ? ORDER BY round_ts",
        [model, besides],
    )


def stored_round_status(con: Connection, round_id: str) -> str | None:
    """The stored status of a round (`running`, `complete`, `crashed`, ...), None when it has no row."""
    row = con.execute("SELECT status FROM rounds WHERE round_id = ?", [round_id]).fetchone()
    return str(row[0]) if row is not None else None


def mark_crashed(
    con: Connection, info: RoundInfo, *, step: str, at: datetime, started_at: datetime | None = None
) -> None:
    """Mark a round that died ``crashed`` with the step it reached (inserting its row if it had none)."""
    with transaction(con):
        mark_running(con, info, started_at=started_at or info.round_ts)
        crashed = con.execute(
            "UPDATE rounds SET status = 'crashed', step = ?, finished_at = ?, error = ? WHERE round_id = ?"
            " AND status = 'running' RETURNING round_id",
            [step, utc(at), one_line(f"the round's process died during step {step}"), info.round_id],
        ).fetchall()
        if crashed:
            record_round_end(con, info.round_id, "crashed", at)
