"""Writing a settled round: everything it produced in ONE transaction, and the round lifecycle rows.

    with open_store(path) as con:
        save_settlement(con, settlement, landed_at=now)   # attempts, outcomes, statuses, states, decisions,
                                                          # the alerts outbox, the metrics rollup and the
                                                          # round marked complete
A crash anywhere before COMMIT leaves nothing of the round's decisions; after it, all of them with their
alerts queued. Saving the same settlement again (a spool landed twice) replaces the round's rows, never
applies the policy twice (``policy_applied:<model>``) and never queues an alert twice (outbox keys). A save
that would replace another run's round of the same id refuses instead (``claim_round_id``: RoundIdTaken).

Rounds that never complete: ``mark_failed`` (the round raised in its own process, which records why) and
``mark_crashed`` (its process is gone: the next round of the model marks it).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from tasks.core.metric_rollup import round_rollup
from tasks.core.types import RoundInfo, RoundState
from tasks.errors import RoundIdTaken
from tasks.runtime.failpoints import failpoint
from tasks.store.alert_threads import record_decision_threads
from tasks.store.landing import complete_round, land_outcomes, land_round
from tasks.store.metric_rollup import record_round_end, roll_up_round
from tasks.store.outbox import enqueue_alerts
from tasks.store.rows import Connection, fetch_dicts, fetch_first, insert_rows, one_line, transaction, utc
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
        claim_round_id(con, info)  # another run's round of this id is refused, never replaced
        land_round(con, info, list(s.attempts), endpoints=list(s.endpoints), status=RoundState.RUNNING)
        land_outcomes(con, info.round_id, s.results)
        applied = policy_applied(con, model)
        if s.decided and (applied is None or applied < info.round_ts):
            replace_policy_states(con, model, s.state_mode or info.mode, list(s.states.values()))
            append_decisions(con, list(s.decisions))
            record_decision_threads(con, s.threads)
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


def claim_round_id(con: Connection, info: RoundInfo) -> None:
    """Refuse (RoundIdTaken) a round id that another run's round already holds: two rounds of one model at one
    instant never replace each other. The same run may land its round again (a deferred round from the spool, a
    round the cycle ran again after the orchestrator refused it); a row or a round with no run (stored before
    runs were recorded, or landed by a tool) is not checked."""
    row = fetch_first(con, "SELECT run_id, status FROM rounds WHERE round_id = ?", [info.round_id])
    if row is None or row[0] is None or info.run_id is None or row[0] == info.run_id:
        return
    raise RoundIdTaken(
        f"round {info.round_id}: another run's round ({row[1]}, run {row[0]}) holds this id; this run's round"
        f" (run {info.run_id}) is not saved, so that round is not replaced"
    )


def mark_running(con: Connection, info: RoundInfo, *, started_at: datetime) -> None:
    """Record that a round started (status ``running``, step ``probe``), unless it is already stored (the same
    run trying again after a failure: ``running`` again); RoundIdTaken when another run's round holds the id."""
    claim_round_id(con, info)
    status = stored_round_state(con, info.round_id)
    if status == RoundState.FAILED:
        con.execute("UPDATE rounds SET status = 'running', step = 'probe', finished_at = NULL, error = NULL"
                    " WHERE round_id = ?", [info.round_id])
    if status is not None:
        return
    _insert_running(con, info, started_at)


def _insert_running(con: Connection, info: RoundInfo, started_at: datetime) -> None:
    insert_rows(con, "rounds", [{
        "round_id": info.round_id, "model": info.model, "round_ts": utc(info.round_ts), "mode": str(info.mode),
        "status": str(RoundState.RUNNING), "started_at": utc(started_at), "endpoints": [], "endpoint_count": 0,
        "attempt_count": 0, "outcome_count": 0, "step": "probe", "partial": info.partial, "run_id": info.run_id,
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


def stored_round_state(con: Connection, round_id: str) -> RoundState | None:
    """A round's stored state (`rounds.status`: running, complete, failed, crashed), None when it has no row."""
    row = con.execute("SELECT status FROM rounds WHERE round_id = ?", [round_id]).fetchone()
    return RoundState(row[0]) if row is not None else None


def mark_crashed(
    con: Connection, info: RoundInfo, *, step: str, at: datetime, started_at: datetime | None = None
) -> bool:
    """Mark a round whose process died ``crashed`` with the step it reached (inserting its row if it had none)."""
    return _mark_ended(con, info, RoundState.CRASHED, step, f"the round's process died during step {step}", at,
                       started_at)


def mark_failed(
    con: Connection, info: RoundInfo, *, step: str, error: str, at: datetime, started_at: datetime | None = None
) -> bool:
    """Mark a round that raised in its own process ``failed`` with its error and the step it reached (inserting
    its row if it had none)."""
    return _mark_ended(con, info, RoundState.FAILED, step, error, at, started_at)


def _mark_ended(con: Connection, info: RoundInfo, status: RoundState, step: str, error: str, at: datetime,
                started_at: datetime | None) -> bool:
    """A round that never completed, ended as `status`. Only a round still ``running`` changes (``failed`` again:
    also a failed one its run tried again), and only this run's: a saved round stays ``complete``, a failed one
    is never marked crashed, another run's round of the same id is left alone. True when the row changed."""
    with transaction(con):
        row = fetch_first(con, "SELECT run_id FROM rounds WHERE round_id = ?", [info.round_id])
        if row is None:
            _insert_running(con, info, started_at or info.round_ts)
        elif row[0] is not None and info.run_id is not None and row[0] != info.run_id:
            return False
        changed = con.execute(
            "UPDATE rounds SET status = ?, step = ?, finished_at = ?, error = ? WHERE round_id = ?"
            " AND list_contains(?, status) RETURNING round_id",
            [str(status), step, utc(at), one_line(error), info.round_id,
             [str(RoundState.RUNNING), str(RoundState.FAILED)] if status == RoundState.FAILED
             else [str(RoundState.RUNNING)]],
        ).fetchall()
        if changed:
            record_round_end(con, info.round_id, status, at)
    return bool(changed)
