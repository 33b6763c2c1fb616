"""Landing rounds, attempts and outcomes: idempotent by round id.

A round's lifecycle in ``rounds.status``: ``running`` (landed, not yet decided), ``complete`` (the flow
finished: only these are judged and replayed), ``failed`` (it raised; its own process recorded why) and
``crashed`` (its process died), both never judged. Landing a round id again replaces every row of that id in
one transaction, so a rerun never duplicates (whose rerun may: tasks/store/settlement.py `claim_round_id`).

    land_round(con, info, attempts, endpoints=endpoints)        # status running
    land_outcomes(con, info.round_id, results)
    complete_round(con, info.round_id, statuses, at=now)         # or finish_round(..., status=RoundState.CRASHED)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from tasks.core.types import STORED_ROUND_STATES, Attempt, ContractResult, Endpoint, RoundInfo, RoundState, RoundStatus
from tasks.runtime.clock import utcnow
from tasks.store.metric_rollup import record_round_end
from tasks.store.records import attempt_row, endpoint_row, outcome_row
from tasks.store.rows import Connection, fetch_first, insert_rows, one_line, transaction, utc

#: Tables holding rows keyed by round id, children first.
_ROUND_TABLES = ("endpoint_rounds", "outcomes", "attempts", "round_endpoints", "rounds")


def land_round(
    con: Connection,
    round: RoundInfo,
    attempts: Sequence[Attempt],
    *,
    endpoints: Sequence[Endpoint | str] = (),
    status: RoundState = RoundState.RUNNING,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    error: str | None = None,
) -> int:
    """Replace everything stored under ``round.round_id`` (round row, endpoints, attempts, outcomes).

    ``endpoints`` is the round's discovery (Endpoint records or bare tags); ``started_at`` defaults to
    ``round.round_ts``. Returns the number of attempts landed.
    """
    _check_state(status)
    rid = round.round_id
    eps = {
        e.tag: e for e in (x if isinstance(x, Endpoint) else Endpoint(round.model, x, "") for x in endpoints)
    }
    tags = sorted(eps)
    row = {
        "round_id": rid,
        "model": round.model,
        "round_ts": utc(round.round_ts),
        "mode": str(round.mode),
        "status": str(status),
        "started_at": utc(started_at or round.round_ts),
        "finished_at": utc(finished_at),
        "endpoints": tags,
        "endpoint_count": len(tags),
        "attempt_count": len(attempts),
        "outcome_count": 0,
        "error": one_line(error),
        "run_id": round.run_id,
    }
    with transaction(con):
        # Child rows only exist under a round row (landed together), so a new round id skips the deletes:
        # on a long history each DELETE is a scan of a large table.
        if fetch_first(con, "SELECT 1 FROM rounds WHERE round_id = ?", [rid]) is not None:
            for table in _ROUND_TABLES:
                con.execute(f"DELETE FROM {table} WHERE round_id = ?", [rid])
        insert_rows(con, "rounds", [row])
        insert_rows(con, "round_endpoints", [endpoint_row(rid, e) for e in eps.values()])
        insert_rows(con, "attempts", [attempt_row(a) for a in attempts])
    return len(attempts)


def land_outcomes(con: Connection, round_id: str, results: Sequence[ContractResult]) -> int:
    """Replace the outcomes of ``round_id`` with ``results``; returns how many landed.

    Recorded endpoint statuses of the round are dropped too: they were derived from the old outcomes.
    """
    with transaction(con):
        con.execute("DELETE FROM endpoint_rounds WHERE round_id = ?", [round_id])
        fresh = "SELECT 1 FROM rounds WHERE round_id = ? AND outcome_count = 0"  # nothing to delete: no scan
        if fetch_first(con, fresh, [round_id]) is None:
            con.execute("DELETE FROM outcomes WHERE round_id = ?", [round_id])
        insert_rows(con, "outcomes", [outcome_row(round_id, r) for r in results])
        con.execute("UPDATE rounds SET outcome_count = ? WHERE round_id = ?", [len(results), round_id])
    return len(results)


def complete_round(
    con: Connection,
    round_id: str,
    statuses: Mapping[str, RoundStatus | str] | None = None,
    *,
    at: datetime | None = None,
) -> bool:
    """Mark a round complete and record the endpoint round statuses the policy was fed.

    ``statuses`` (tag -> clean/fail/transport/inconclusive) replace any recorded for the round; when None,
    ``v_endpoint_rounds`` derives them from the outcomes. False when the round id is unknown.
    """
    model = fetch_first(con, "SELECT model FROM rounds WHERE round_id = ?", [round_id])
    if model is None:
        return False
    rows = [
        {"round_id": round_id, "model": model[0], "tag": tag, "status": str(RoundStatus(status))}
        for tag, status in sorted((statuses or {}).items())
    ]
    with transaction(con):
        if statuses is not None:
            con.execute("DELETE FROM endpoint_rounds WHERE round_id = ?", [round_id])
            insert_rows(con, "endpoint_rounds", rows)
        finish_round(con, round_id, status=RoundState.COMPLETE, at=at if at is not None else utcnow())
    return True


def finish_round(
    con: Connection, round_id: str, *, status: RoundState, at: datetime, error: str | None = None
) -> bool:
    """Set a round's final state (``complete``, ``failed`` or ``crashed``) and ``finished_at``; False if unknown."""
    _check_state(status)
    row = con.execute(
        "UPDATE rounds SET status = ?, finished_at = ?, error = ? WHERE round_id = ? RETURNING round_id",
        [str(status), utc(at), one_line(error), round_id],
    ).fetchall()
    record_round_end(con, round_id, status, at)  # canary_rounds_total's ledger (tasks/store/metric_rollup.py)
    return bool(row)


def _check_state(status: str) -> None:
    if status not in STORED_ROUND_STATES:
        raise ValueError(f"round status must be one of {tuple(map(str, STORED_ROUND_STATES))} (got {str(status)!r})")
