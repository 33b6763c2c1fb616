"""Policy state per (model, tag, mode), the decision log, and settings (the current mode, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tasks.core.exclusions import describe_suspension
from tasks.core.types import Action, Decision, EndpointState, Mode
from tasks.store.rows import Connection, fetch_dicts, fetch_first, insert_rows, one_line, transaction, utc

#: The settings key that holds the operating mode (observe | enforce) chosen at runtime.
MODE_KEY = "mode"


def load_states(con: Connection, model: str, mode: Mode | str) -> dict[str, EndpointState]:
    """The stored policy state of every endpoint of ``model`` in ``mode``, keyed by tag."""
    rows = fetch_dicts(
        con, "SELECT * FROM endpoint_state WHERE model = ? AND mode = ? ORDER BY tag", [model, str(mode)]
    )
    return {r["tag"]: _state_from_row(r) for r in rows}


def load_policy_states(con: Connection, model: str, mode: Mode) -> dict[str, EndpointState]:
    """The model's states in ``mode``, seeded from the other mode's rows where ``mode`` has none (a switch)."""
    other = Mode.OBSERVE if mode is Mode.ENFORCE else Mode.ENFORCE
    return {**load_states(con, model, other), **load_states(con, model, mode)}


def replace_policy_states(con: Connection, model: str, mode: Mode, states: Sequence[EndpointState]) -> None:
    """One state per endpoint: the current mode's. Stale rows of the other mode would leak suspensions."""
    with transaction(con):
        save_states(con, list(states))
        con.execute("DELETE FROM endpoint_state WHERE model = ? AND mode <> ?", [model, str(mode)])


def save_states(con: Connection, states: Sequence[EndpointState] | dict[str, EndpointState]) -> int:
    """Upsert states by (model, tag, mode); returns how many were written."""
    items = list(states.values()) if isinstance(states, dict) else list(states)
    groups: dict[tuple[str, str], list[str]] = {}
    for s in items:
        groups.setdefault((s.model, str(s.mode)), []).append(s.tag)
    with transaction(con):
        for (model, mode), tags in groups.items():  # one statement per (model, mode), not one per endpoint
            con.execute(
                "DELETE FROM endpoint_state WHERE model = ? AND mode = ? AND list_contains(?, tag)",
                [model, mode, tags],
            )
        insert_rows(con, "endpoint_state", [_state_row(s) for s in items])
    return len(items)


def append_decisions(con: Connection, decisions: Sequence[Decision]) -> int:
    """Record decisions, skipping any whose ``decision_id`` is already stored; returns how many were new."""
    if not decisions:
        return 0
    unique = {d.decision_id: d for d in decisions}
    return insert_rows(con, "decisions", [_decision_row(d) for d in unique.values()], skip_existing=True)


def decisions_between(
    con: Connection,
    start: datetime | None = None,
    end: datetime | None = None,
    *,
    model: str | None = None,
    tag: str | None = None,
    mode: Mode | str | None = None,
) -> list[Decision]:
    """Decisions with ``start <= at < end`` (either bound optional), oldest first."""
    clauses, params = [], []
    for clause, value in (
        ("decided_at >= ?", utc(start)),
        ("decided_at < ?", utc(end)),
        ("model = ?", model),
        ("tag = ?", tag),
        ("mode = ?", str(mode) if mode is not None else None),
    ):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    where = " AND ".join(clauses) or "TRUE"
    rows = fetch_dicts(
        con, f"SELECT * FROM decisions WHERE {where} ORDER BY decided_at, model, tag, decision_id", params
    )
    return [_decision_from_row(r) for r in rows]


def set_setting(
    con: Connection, key: str, value: str, *, at: datetime | None = None, who: str | None = None
) -> None:
    """Set ``key`` to ``value`` and append the change to ``settings_history``."""
    with transaction(con):
        con.execute("DELETE FROM settings WHERE key = ?", [key])
        con.execute("INSERT INTO settings VALUES (?, ?, ?, ?)", [key, value, utc(at), one_line(who)])
        con.execute("INSERT INTO settings_history VALUES (?, ?, ?, ?)", [key, value, utc(at), one_line(who)])


def get_setting(con: Connection, key: str, default: str | None = None) -> str | None:
    row = fetch_first(con, "SELECT value FROM settings WHERE key = ?", [key])
    return str(row[0]) if row else default


def _state_row(s: EndpointState) -> dict[str, Any]:
    return {
        "model": s.model,
        "tag": s.tag,
        "mode": str(s.mode),
        "fail_streak": s.fail_streak,
        "clean_streak": s.clean_streak,
        "suspended_until": utc(s.suspended_until),
        "suspended_at": utc(s.suspended_at),
        "ladder_step": s.ladder_step,
        "last_suspension_end": utc(s.last_suspension_end),
        "floor_blocked": s.floor_blocked,
        "fail_rounds": list(s.fail_rounds),
        "clean_rounds": list(s.clean_rounds),
        "streak_at": utc(s.streak_at),
    }


def _state_from_row(r: dict[str, Any]) -> EndpointState:
    return EndpointState(
        model=r["model"],
        tag=r["tag"],
        mode=Mode(r["mode"]),
        fail_streak=r["fail_streak"],
        clean_streak=r["clean_streak"],
        suspended_until=r["suspended_until"],
        suspended_at=r["suspended_at"],
        ladder_step=r["ladder_step"],
        last_suspension_end=r["last_suspension_end"],
        floor_blocked=r["floor_blocked"],
        fail_rounds=tuple(r["fail_rounds"]),
        clean_rounds=tuple(r["clean_rounds"]),
        streak_at=r.get("streak_at"),
    )


def _decision_row(d: Decision) -> dict[str, Any]:
    return {
        "decision_id": d.decision_id,
        "decided_at": utc(d.at),
        "model": d.model,
        "tag": d.tag,
        "action": str(d.action),
        "mode": str(d.mode),
        "ladder_step": d.ladder_step,
        "until": utc(d.until),
        "reason": one_line(d.reason) or "",
        "evidence_round_ids": list(d.evidence_round_ids),
        "round_id": d.round_id,
        "actor": one_line(d.actor) or "canary",
    }


def _decision_from_row(r: dict[str, Any]) -> Decision:
    return Decision(
        at=r["decided_at"],
        model=r["model"],
        tag=r["tag"],
        action=Action(r["action"]),
        mode=Mode(r["mode"]),
        ladder_step=r["ladder_step"],
        until=r["until"],
        reason=r["reason"],
        evidence_round_ids=tuple(r["evidence_round_ids"]),
        round_id=r["round_id"],
        actor=r["actor"],
    )


def suspension_evidence(con: Connection, model: str, tags: Sequence[str]) -> dict[str, str]:
    """Tag -> why its latest `suspend` happened (`tasks.core.exclusions.describe_suspension`): the failing
    contracts and reasons in that decision's evidence rounds, and those rounds."""
    if not tags:
        return {}
    rows = fetch_dicts(
        con,
        "SELECT tag, evidence_round_ids FROM decisions WHERE model = ? AND action = 'suspend'"
        " AND list_contains(?, tag) QUALIFY row_number() OVER (PARTITION BY tag ORDER BY decided_at DESC) = 1",
        [model, list(tags)],
    )
    out: dict[str, str] = {}
    for row in rows:
        ids = list(row["evidence_round_ids"] or [])
        failures = con.execute(
            "SELECT contract, reason FROM outcomes WHERE model = ? AND tag = ? AND outcome = 'fail'"
            " AND list_contains(?, round_id)",
            [model, row["tag"], ids],
        ).fetchall()
        out[row["tag"]] = describe_suspension([(str(c), str(r)) for c, r in failures], ids)
    return out
