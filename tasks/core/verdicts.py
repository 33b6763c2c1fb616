"""Verdict aggregation (docs/design.md "round status"): contract outcomes -> a status per endpoint and round.

    fail           if any contract failed;
    transport      else if any contract was transport;
    clean          else if at least one contract passed;
    inconclusive   else (only inconclusive outcomes).

Pure pandas over frames; the outcome frame has the columns of the `outcomes` table
(round_id, model, tag, contract, outcome, reason), one row per contract result. An endpoint without a
contract result has no row (the policy sees it absent; both absent and inconclusive freeze its streaks).

This is the reference. Its SQL twin is `v_endpoint_rounds.derived_status` (tasks/store/views.py), which
shows a discovered endpoint without results as inconclusive; tests/integration/test_status_agreement.py
keeps the two equal. Migrations are append-only, so a change to the rule here is a new view migration there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from tasks.core.types import ContractResult, Outcome, RoundStatus

__all__ = ["OUTCOME_COLUMNS", "STATUS_COLUMNS", "results_frame", "round_status", "status_map", "status_of"]

OUTCOME_COLUMNS: tuple[str, ...] = ("round_id", "model", "tag", "contract", "outcome", "reason")
STATUS_COLUMNS: tuple[str, ...] = ("round_id", "model", "tag", "status")

#: Precedence of outcomes: the highest one present decides the round status.
_RANK: Mapping[str, int] = {
    Outcome.INCONCLUSIVE.value: 0,
    Outcome.PASS.value: 1,
    Outcome.TRANSPORT.value: 2,
    Outcome.FAIL.value: 3,
}
_STATUS_BY_RANK: Mapping[int, str] = {
    0: RoundStatus.INCONCLUSIVE.value,
    1: RoundStatus.CLEAN.value,
    2: RoundStatus.TRANSPORT.value,
    3: RoundStatus.FAIL.value,
}


def status_of(outcomes: Iterable[Outcome | str]) -> RoundStatus:
    """One endpoint's round status from its outcomes, without a frame: the same precedence as `round_status`
    (for the budget projection and the round artifact; no outcomes at all is inconclusive)."""
    return RoundStatus(_STATUS_BY_RANK[max((_RANK[str(o)] for o in outcomes), default=0)])


def results_frame(results: Iterable[ContractResult]) -> pd.DataFrame:
    """ContractResults -> an outcome frame (enum values as their strings)."""
    rows = [
        (r.round_id, r.model, r.tag, str(r.contract), str(r.outcome), r.reason) for r in results
    ]
    return pd.DataFrame(rows, columns=list(OUTCOME_COLUMNS))


def round_status(outcomes: pd.DataFrame) -> pd.DataFrame:
    """One row per (round_id, model, tag) with its round status, sorted by those keys.

    Raises ValueError naming an outcome value that is not pass/fail/transport/inconclusive, or a
    missing column.
    """
    missing = [c for c in ("round_id", "model", "tag", "outcome") if c not in outcomes.columns]
    if missing:
        raise ValueError(f"outcome frame lacks column(s) {', '.join(missing)}")
    if outcomes.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in STATUS_COLUMNS})
    ranks = outcomes["outcome"].astype(str).map(_RANK)
    if ranks.isna().any():
        bad = outcomes.loc[ranks.isna(), "outcome"].iloc[0]
        raise ValueError(f"unknown outcome {bad!r} (expected one of {', '.join(_RANK)})")
    frame = outcomes[["round_id", "model", "tag"]].assign(rank=ranks.astype(int))
    worst = frame.groupby(["round_id", "model", "tag"], sort=True)["rank"].max().reset_index()
    worst["status"] = worst["rank"].map(_STATUS_BY_RANK)
    result = worst.reindex(columns=list(STATUS_COLUMNS))
    return result


def status_map(statuses: pd.DataFrame) -> dict[str, RoundStatus]:
    """A round-status frame of one round and model -> {tag: RoundStatus} (the policy's input)."""
    return {str(tag): RoundStatus(str(s)) for tag, s in zip(statuses["tag"], statuses["status"], strict=True)}
