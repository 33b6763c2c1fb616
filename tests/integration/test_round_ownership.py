"""Who may write a round's rows, and how a round that never completed ends (tasks/store/settlement.py,
tasks/round/write_window.py `land_leftovers`, tasks/spool/journal.py journals). Real DuckDB files, no Prefect.

* A save (and a round's start) refuses a round id another run's round holds: RoundIdTaken, nothing replaced.
  The same run lands its round again (a deferred round from the spool); rounds stored before runs were recorded
  (no run) stay replaceable.
* A spooled round whose id another run took meanwhile is set aside (`.refused.json`, kept) instead of failing
  every later round.
* A round that raised and could not record it (its journal says why) ends `failed` with that error, never
  `crashed`, even while its process still runs; a failed round is never overwritten by the `crashed` mark.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.judge import judge_round
from tasks.core.settle import Prior, settle_round
from tasks.core.types import Mode, RoundInfo
from tasks.errors import RoundIdTaken
from tasks.round.write_window import JudgedSpool, land_leftovers
from tasks.spool.journal import Journal, SpooledRound, spool_dir, spool_round, spooled_rounds
from tasks.store.settlement import mark_crashed, mark_failed, mark_running, save_settlement

pytestmark = pytest.mark.integration
MODEL = "acme/owned-model"
T0 = datetime(2026, 8, 1, 8, 0, tzinfo=UTC)
CFG = CanaryConfig(models=[MODEL], languages=["en"])


def cfg(db: Path) -> CanaryConfig:
    return CanaryConfig(models=[MODEL], languages=["en"], db_path=str(db))


def settled_round(run_id: str | None, ts: datetime = T0):  # type: ignore[no-untyped-def]
    """A settled round of no endpoints (what matters here is whose round it is)."""
    return settle_round(Prior(model=MODEL, mode=Mode.ENFORCE), [], [], CFG, ts, run_id=run_id)


def rounds(db: Path) -> list[tuple[object, ...]]:
    with store.open_store(db, read_only=True) as con:
        return con.execute("SELECT round_id, status, run_id, error FROM rounds ORDER BY round_ts").fetchall()


def test_a_save_refuses_another_runs_round_and_the_same_run_lands_again(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    mine = settled_round("run-a")
    with store.open_store(db) as con:
        save_settlement(con, mine, landed_at=T0)
        save_settlement(con, mine, landed_at=T0 + timedelta(minutes=1), deferred=True)  # the same run: replaces
        with pytest.raises(RoundIdTaken, match=r"another run's round \(complete, run run-a\) holds this id"):
            save_settlement(con, settled_round("run-b"), landed_at=T0)
        with pytest.raises(RoundIdTaken):
            mark_running(con, settled_round("run-b").info, started_at=T0)
    assert rounds(db) == [(mine.info.round_id, "complete", "run-a", None)]


def test_a_round_stored_without_a_run_stays_replaceable(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    with store.open_store(db) as con:
        save_settlement(con, settled_round(None), landed_at=T0)  # as stored before runs were recorded
        save_settlement(con, settled_round("run-b"), landed_at=T0)
    assert [r[1:3] for r in rounds(db)] == [("complete", "run-b")]


def test_failed_and_crashed_marks_touch_only_their_own_runs_unfinished_round(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    info = RoundInfo(f"{MODEL}@x", MODEL, T0, Mode.ENFORCE, run_id="run-a")
    with store.open_store(db) as con:
        assert mark_failed(con, info, step="probe", error="DiscoveryUnreachable: HTTP 500", at=T0)
        assert not mark_crashed(con, info, step="probe", at=T0)  # failed stays failed... unless its run retries:
        mark_running(con, info, started_at=T0)
        other = RoundInfo(info.round_id, MODEL, T0, Mode.ENFORCE, run_id="run-b")
        assert not mark_failed(con, other, step="save", error="not mine", at=T0)
    assert rounds(db) == [(info.round_id, "running", "run-a", None)]


def test_a_spooled_round_whose_id_was_taken_is_set_aside_and_kept(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    theirs = settled_round("run-a")
    spooled = settled_round("run-b")  # the same id, another run: deferred while the file was busy
    spool_round(str(db), SpooledRound(spooled.info, None, (), (), T0))
    with store.open_store(db) as con:
        save_settlement(con, theirs, landed_at=T0)
        [s] = spooled_rounds(str(db))
        lines = land_leftovers(con, cfg(db), MODEL, f"{MODEL}@next", [JudgedSpool(s, judge_round([], [], CFG))], T0)
    assert len(lines) == 1 and lines[0].startswith(f"deferred round {spooled.info.round_id} not landed: ")
    assert spooled_rounds(str(db)) == []  # not tried again by every round
    [kept] = spool_dir(db).glob("*.refused.json")
    assert json.loads(kept.read_text())["run_id"] == "run-b"
    assert rounds(db) == [(theirs.info.round_id, "complete", "run-a", None)]


def test_a_journal_that_says_why_its_round_failed_ends_it_failed_not_crashed(tmp_path: Path) -> None:
    """The round raised and its process could not reach the store (the journal keeps the error); the process
    still runs (this one), yet the round is over: the next round marks it `failed` with the error."""
    db = tmp_path / "c.duckdb"
    info = RoundInfo(f"{MODEL}@1", MODEL, T0, Mode.ENFORCE, run_id="run-a")
    with store.open_store(db) as con:
        mark_running(con, info, started_at=T0)
    journal = Journal.start(str(db), info, T0)
    journal.step("probe")
    journal.fail("DiscoveryUnreachable: discovery: http://127.0.0.1:1/api/v1 answered HTTP 500 for m")
    with store.open_store(db) as con:
        lines = land_leftovers(con, cfg(db), MODEL, f"{MODEL}@2", [], T0 + timedelta(minutes=30))
    assert lines == [f"round {info.round_id} failed during step probe: DiscoveryUnreachable: discovery: "
                     "http://127.0.0.1:1/api/v1 answered HTTP 500 for m"]
    assert rounds(db) == [(info.round_id, "failed", "run-a", lines[0].split("probe: ", 1)[1])]
    assert not journal.path.exists()
