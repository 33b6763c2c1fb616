"""Rounds, attempts and outcomes: idempotent landing by round id, and reads of complete rounds.

A round's lifecycle in `rounds.status`: ``running`` (landed, not yet judged/decided), ``complete`` (the
flow finished: only these are judged and replayed), ``crashed`` (never judged). Landing a round id again
replaces every row of that id in one transaction, so a rerun never duplicates.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from tasks.store.rows import Connection, fetch_dicts, insert_rows, one_line, redact, transaction, utc
from tasks.types import (
    Attempt,
    Contract,
    ContractResult,
    Endpoint,
    ErrorClass,
    Outcome,
    RoundInfo,
    Usage,
)

ROUND_STATES = ("running", "complete", "crashed")
#: Defensive cap on stored reply text, characters (probes already cap at text_cap_bytes of UTF-8).
MAX_TEXT_CHARS = 64 * 1024


def land_round(
    con: Connection,
    round: RoundInfo,
    attempts: Sequence[Attempt],
    *,
    endpoints: Sequence[Endpoint | str] = (),
    status: str = "running",
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    error: str | None = None,
) -> int:
    """Replace everything stored under ``round.round_id`` (round row, endpoints, attempts, outcomes).

    Returns the number of attempts landed. ``endpoints`` is the round's discovery (Endpoint records or
    bare tags); ``started_at`` defaults to ``round.round_ts``.
    """
    _check_state(status)
    rid = round.round_id
    eps = [e if isinstance(e, Endpoint) else Endpoint(round.model, e, "") for e in endpoints]
    tags = sorted({e.tag for e in eps})
    with transaction(con):
        for table in ("outcomes", "attempts", "round_endpoints", "rounds"):
            con.execute(f"DELETE FROM {table} WHERE round_id = ?", [rid])
        insert_rows(
            con,
            "rounds",
            [
                {
                    "round_id": rid,
                    "model": round.model,
                    "round_ts": utc(round.round_ts),
                    "mode": str(round.mode),
                    "status": status,
                    "started_at": utc(started_at or round.round_ts),
                    "finished_at": utc(finished_at),
                    "endpoints": tags,
                    "endpoint_count": len(tags),
                    "attempt_count": len(attempts),
                    "outcome_count": 0,
                    "error": one_line(error),
                }
            ],
        )
        insert_rows(con, "round_endpoints", [_endpoint_row(rid, e) for e in {e.tag: e for e in eps}.values()])
        insert_rows(con, "attempts", [_attempt_row(a) for a in attempts])
    return len(attempts)


def land_outcomes(con: Connection, round_id: str, results: Sequence[ContractResult]) -> int:
    """Replace the outcomes of ``round_id`` with ``results``; returns how many landed."""
    with transaction(con):
        con.execute("DELETE FROM outcomes WHERE round_id = ?", [round_id])
        insert_rows(con, "outcomes", [_outcome_row(round_id, r) for r in results])
        con.execute("UPDATE rounds SET outcome_count = ? WHERE round_id = ?", [len(results), round_id])
    return len(results)


def finish_round(
    con: Connection, round_id: str, *, status: str, at: datetime, error: str | None = None
) -> bool:
    """Set a round's final state (``complete`` or ``crashed``) and ``finished_at``; False if unknown."""
    _check_state(status)
    row = con.execute(
        "UPDATE rounds SET status = ?, finished_at = ?, error = ? WHERE round_id = ? RETURNING round_id",
        [status, utc(at), one_line(error), round_id],
    ).fetchall()
    return bool(row)


def complete_rounds(
    con: Connection, *, model: str | None = None, since: datetime | None = None, until: datetime | None = None
) -> pd.DataFrame:
    """Complete rounds only (crashed and running ones are never judged), oldest first."""
    where, params = _round_filter(model, since, until)
    return con.execute(
        f"SELECT * FROM rounds WHERE status = 'complete' {where} ORDER BY round_ts, round_id", params
    ).df()


def round_rows(con: Connection, *, model: str | None = None) -> pd.DataFrame:
    """Every round in any state, oldest first (for status pages and crash forensics)."""
    where, params = _round_filter(model, None, None)
    return con.execute(f"SELECT * FROM rounds WHERE TRUE {where} ORDER BY round_ts, round_id", params).df()


def round_status_history(
    con: Connection, *, model: str | None = None, since: datetime | None = None, until: datetime | None = None
) -> pd.DataFrame:
    """Endpoint round statuses of complete rounds: columns round_ts, model, tag, status (+ round_id).

    This is the replay input (DESIGN.md "Replay input"), in round order then tag order.
    """
    where, params = _round_filter(model, since, until)
    return con.execute(
        "SELECT round_ts, model, tag, status, round_id, discovered FROM v_endpoint_rounds"
        f" WHERE round_state = 'complete' {where} ORDER BY round_ts, round_id, tag",
        params,
    ).df()


def attempts_of_round(con: Connection, round_id: str) -> list[Attempt]:
    """The landed attempts of one round, as records (e.g. to judge a landed round again)."""
    rows = fetch_dicts(con, "SELECT * FROM attempts WHERE round_id = ? ORDER BY attempt_id", [round_id])
    return [_attempt_from_row(r) for r in rows]


def outcomes_of_round(con: Connection, round_id: str) -> list[ContractResult]:
    rows = fetch_dicts(con, "SELECT * FROM outcomes WHERE round_id = ? ORDER BY tag, contract", [round_id])
    return [_outcome_from_row(r) for r in rows]


def latest_outcomes(con: Connection, model: str, contract: Contract | str) -> dict[str, ContractResult]:
    """Per tag, ``contract``'s outcome in the latest complete round that judged it (language rotation)."""
    rows = fetch_dicts(
        con,
        "SELECT o.* FROM outcomes o JOIN rounds r USING (round_id)"
        " WHERE r.status = 'complete' AND o.model = ? AND o.contract = ?"
        " QUALIFY row_number() OVER (PARTITION BY o.tag ORDER BY r.round_ts DESC, r.round_id DESC) = 1",
        [model, str(contract)],
    )
    return {r["tag"]: _outcome_from_row(r) for r in rows}


def _check_state(status: str) -> None:
    if status not in ROUND_STATES:
        raise ValueError(f"round status must be one of {ROUND_STATES} (got {status!r})")


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


def _endpoint_row(round_id: str, e: Endpoint) -> dict[str, Any]:
    return {
        "round_id": round_id,
        "model": e.model,
        "tag": e.tag,
        "provider_name": e.provider_name or None,
        "quantization": e.quantization,
        "endpoint_status": e.status,
        "context_length": e.context_length,
        "supported_parameters": list(e.supported_parameters),
    }


def _attempt_row(a: Attempt) -> dict[str, Any]:
    text = a.text if len(a.text) <= MAX_TEXT_CHARS else a.text[:MAX_TEXT_CHARS]
    return {
        "attempt_id": a.attempt_id,
        "round_id": a.round_id,
        "model": a.model,
        "tag": a.tag,
        "provider_name": a.provider_name,
        "contract": str(a.contract),
        "attempt_no": a.attempt_no,
        "language": a.language,
        "started_at": utc(a.started_at),
        "http_status": a.http_status,
        "ttft_ms": a.ttft_ms,
        "total_ms": a.total_ms,
        "chunk_count": a.chunk_count,
        "keepalive_count": a.keepalive_count,
        "finish_reason": a.finish_reason,
        "native_finish_reason": a.native_finish_reason,
        "served_provider": a.served_provider,
        "pin_mismatch": a.is_pin_mismatch,
        "prompt_tokens": a.usage.prompt_tokens,
        "completion_tokens": a.usage.completion_tokens,
        "total_tokens": a.usage.total_tokens,
        "cost": a.usage.cost,
        "text": redact(text),
        "text_truncated": a.text_truncated or text != a.text,
        "reasoning": redact(a.reasoning[:MAX_TEXT_CHARS]),
        "error_class": str(a.error_class) if a.error_class else None,
        "error_code": a.error_code,
        "error_detail": one_line(a.error_detail),
        "retry_after_s": a.retry_after_s,
    }


def _attempt_from_row(r: dict[str, Any]) -> Attempt:
    return Attempt(
        round_id=r["round_id"],
        model=r["model"],
        tag=r["tag"],
        provider_name=r["provider_name"],
        contract=Contract(r["contract"]),
        attempt_no=r["attempt_no"],
        started_at=r["started_at"],
        language=r["language"],
        http_status=r["http_status"],
        ttft_ms=r["ttft_ms"],
        total_ms=r["total_ms"],
        chunk_count=r["chunk_count"],
        keepalive_count=r["keepalive_count"],
        finish_reason=r["finish_reason"],
        native_finish_reason=r["native_finish_reason"],
        served_provider=r["served_provider"],
        usage=Usage(r["prompt_tokens"], r["completion_tokens"], r["total_tokens"], r["cost"]),
        text=r["text"],
        text_truncated=r["text_truncated"],
        reasoning=r["reasoning"],
        error_class=ErrorClass(r["error_class"]) if r["error_class"] else None,
        error_code=r["error_code"],
        error_detail=r["error_detail"],
        retry_after_s=r["retry_after_s"],
    )


def _outcome_row(round_id: str, c: ContractResult) -> dict[str, Any]:
    if c.round_id != round_id:
        raise ValueError(f"outcome of round {c.round_id!r} landed under {round_id!r}")
    return {
        "round_id": round_id,
        "model": c.model,
        "tag": c.tag,
        "contract": str(c.contract),
        "outcome": str(c.outcome),
        "reason": c.reason,
        "evidence": redact(c.evidence),
        "attempt_ids": list(c.attempt_ids),
        "language": c.language,
    }


def _outcome_from_row(r: dict[str, Any]) -> ContractResult:
    return ContractResult(
        round_id=r["round_id"],
        model=r["model"],
        tag=r["tag"],
        contract=Contract(r["contract"]),
        outcome=Outcome(r["outcome"]),
        reason=r["reason"],
        evidence=r["evidence"],
        attempt_ids=tuple(r["attempt_ids"]),
        language=r["language"],
    )
