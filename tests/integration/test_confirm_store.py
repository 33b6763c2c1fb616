"""Partial (confirmation) rounds in the store: landed with `rounds.partial`, settled against the last full
round's endpoints (also when the prior is read again inside the save window), and kept partial by a spool."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.judge import RoundFindings, RoundJudgement
from tasks.core.plan import make_round_id
from tasks.core.types import Contract, ContractResult, Endpoint, Mode, Outcome, RoundInfo
from tasks.round.write_window import read_prior, settle_and_save
from tasks.spool.journal import SpooledRound, spool_round, spooled_rounds
from tasks.store.history import known_tags
from tasks.store.settlement import partial_round_ids
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration
MODEL = "acme/model"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
TAGS = ("a", "b", "c", "d")


def judgement(ts: datetime, outcomes: dict[str, Outcome]) -> RoundJudgement:
    rid = make_round_id(MODEL, ts)
    return RoundJudgement([ContractResult(rid, MODEL, t, Contract.STRUCTURED, o, "x") for t, o in outcomes.items()],
                          RoundFindings())


def test_a_partial_round_lands_partial_and_settles_with_the_full_rounds_endpoints(tmp_path: Path) -> None:
    cfg = CanaryConfig(models=(MODEL,), mode=Mode.ENFORCE, db_path=str(tmp_path / "c.duckdb"),
                       exclusions_file=NO_EXCLUSIONS)
    eps = [Endpoint(MODEL, t, t.upper()) for t in TAGS]
    at = T0 + timedelta(minutes=5)
    full = RoundInfo(make_round_id(MODEL, T0), MODEL, T0, Mode.ENFORCE)
    partial = RoundInfo(make_round_id(MODEL, at), MODEL, at, Mode.ENFORCE, partial=True)
    with store.open_store(cfg.db_path) as con:
        settle_and_save(con, cfg, full, judgement(T0, {t: Outcome.FAIL if t == "b" else Outcome.PASS for t in TAGS}),
                        [], eps, landed_at=T0)
        saved = settle_and_save(con, cfg, partial, judgement(at, {"b": Outcome.FAIL}), [], eps[1:2],
                                landed_at=at)
        rows = con.execute("SELECT round_id, partial, endpoints FROM rounds ORDER BY round_ts").fetchall()
        prior = read_prior(con, cfg, MODEL, T0 + timedelta(minutes=30))
        ids = partial_round_ids(con)
        known = known_tags(con, MODEL)
    assert saved.info.partial
    assert known == list(TAGS)  # `canary exclude add` checks tags against the full round's discovery
    assert [(str(d.action), d.tag) for d in saved.decisions] == [("suspend", "b")]  # 3 others discovered
    assert rows == [(full.round_id, False, list(TAGS)), (partial.round_id, True, ["b"])]
    assert ids == {partial.round_id}
    # the next full round compares itself with the last full round, not with the confirmation
    assert prior.last_full_tags == TAGS
    assert {r.round_id for r in prior.previous_results} == {full.round_id}
    assert prior.last_complete_ts == at


def test_a_spooled_partial_round_stays_partial(tmp_path: Path) -> None:
    info = RoundInfo(make_round_id(MODEL, T0), MODEL, T0, Mode.ENFORCE, partial=True)
    db = str(tmp_path / "c.duckdb")
    spool_round(db, SpooledRound(info, None, (Endpoint(MODEL, "b", "B"),), (), T0))
    [back] = spooled_rounds(db)
    assert back.info == info
