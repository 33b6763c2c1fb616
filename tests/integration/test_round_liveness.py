"""A leftover round is marked `crashed` only when its process is gone (tasks/round/write_window.py
`land_leftovers`, journals of tasks/spool/journal.py, liveness of tasks/runtime/liveness.py): pid, host and process
start time, so a reused pid is not mistaken for the round's process. Real DuckDB, real processes, no Prefect."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.types import Mode, RoundInfo
from tasks.round.write_window import land_leftovers
from tasks.runtime.liveness import ProcessId, process_start
from tasks.spool.journal import Journal
from tasks.store.settlement import mark_running

pytestmark = pytest.mark.integration
MODEL = "acme/live-model"
T0 = datetime(2026, 8, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def leftover(db: Path, owner: ProcessId) -> RoundInfo:
    """Round 1 marked running in the database, with a journal that names `owner` as its process."""
    info = RoundInfo(f"{MODEL}@1", MODEL, T0, Mode.ENFORCE)
    with store.open_store(db) as con:
        mark_running(con, info, started_at=T0)
    journal = Journal.start(str(db), info, T0)
    obj = json.loads(journal.path.read_text())
    journal.path.write_text(json.dumps({**obj, **owner.as_json()}))
    return info


def statuses_after_next_round(db: Path) -> dict[str, str]:
    cfg = CanaryConfig(db_path=str(db), models=[MODEL])
    with store.open_store(db) as con:
        land_leftovers(con, cfg, MODEL, f"{MODEL}@2", [], T0 + timedelta(minutes=30))
        return dict(con.execute("SELECT round_id, status FROM rounds").fetchall())


def test_a_round_whose_process_still_runs_is_not_marked_crashed(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    db = tmp_path / "c.duckdb"
    info = leftover(db, ProcessId(sleeper.pid, ProcessId.current().host, process_start(sleeper.pid)))
    assert statuses_after_next_round(db) == {info.round_id: "running"}

    sleeper.kill()
    sleeper.wait()
    assert statuses_after_next_round(db) == {info.round_id: "crashed"}


def test_a_reused_pid_does_not_keep_a_dead_round_alive(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    """The journal's pid runs, but it is another process (it started at another time): the round's process died."""
    start = process_start(sleeper.pid)
    assert start is not None
    db = tmp_path / "c.duckdb"
    info = leftover(db, ProcessId(sleeper.pid, ProcessId.current().host, start - 1))
    assert statuses_after_next_round(db) == {info.round_id: "crashed"}


def test_a_round_of_another_host_is_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    info = leftover(db, ProcessId(1, "some-other-host", 42))
    assert statuses_after_next_round(db) == {info.round_id: "running"}
