"""DuckDB's one-writer lock across processes: short write windows, bounded retry, the analysts' snapshot.

Other processes are real subprocesses running Python, because DuckDB's lock is per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tasks import store
from tasks.core.types import Attempt, Contract, Mode, RoundInfo
from tasks.errors import StoreError
from tasks.store.snapshot import SnapshotCopy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MODEL = "m/one"


def land(db: str | Path, n: int, **window: object) -> None:
    info = RoundInfo(f"r{n}", MODEL, T0 + timedelta(minutes=30 * n), Mode.OBSERVE)
    attempts = [
        Attempt(info.round_id, MODEL, f"tag{i}", f"P{i}", Contract.TTFT, 1, info.round_ts, ttft_ms=100.0)
        for i in range(6)
    ]
    with store.open_store(db, **window) as con:  # type: ignore[arg-type]
        store.land_round(con, info, attempts, endpoints=[a.tag for a in attempts])
        store.complete_round(con, info.round_id, at=info.round_ts)


class Child:
    """A Python subprocess speaking line by line over stdin/stdout."""

    def __init__(self, code: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-c", textwrap.dedent(code)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )

    def read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            raise AssertionError(f"child said nothing; stderr: {self.stderr()}")
        return line

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # only the child this test started, by its own handle
        self.proc.wait(timeout=10)


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.stop()


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
def test_a_reader_holding_the_snapshot_never_blocks_a_round(tmp_db: str, children: list[Child]) -> None:
    land(tmp_db, 1)
    reader = Child(f"""
        import sys
        from tasks.store import open_snapshot
        con = open_snapshot({tmp_db!r})
        print("rounds", con.execute("SELECT count(*) FROM rounds").fetchall()[0][0])
        sys.stdin.readline()
        print("held", con.execute("SELECT count(*) FROM rounds").fetchall()[0][0])
        print("fresh", open_snapshot({tmp_db!r}).execute("SELECT count(*) FROM rounds").fetchall()[0][0])
    """)
    children.append(reader)
    assert reader.read() == "rounds 1"

    started = time.monotonic()
    land(tmp_db, 2, lock_timeout_s=0.5)  # must not need to wait for the reader at all
    assert time.monotonic() - started < 2.0

    con = store.open_snapshot(tmp_db)
    try:
        assert con.execute("SELECT round_id FROM rounds ORDER BY round_ts").fetchall() == [("r1",), ("r2",)]
        assert con.execute("SELECT count(*) FROM v_endpoint_rounds WHERE round_id = 'r2'").fetchall() == [
            (6,)
        ]
    finally:
        con.close()
    reader.send("go")
    assert reader.read() == "held 1"  # the open reader kept its old file: a consistent, older view
    assert reader.read() == "fresh 2"  # reconnecting shows the round that just landed


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
def test_a_lock_held_past_the_budget_is_one_line_store_error(tmp_db: str, children: list[Child]) -> None:
    land(tmp_db, 1)
    holder = Child(f"""
        import sys, time, duckdb
        con = duckdb.connect({tmp_db!r})
        print("locked", flush=True)
        time.sleep(30)
    """)
    children.append(holder)
    assert holder.read() == "locked"
    started = time.monotonic()
    with pytest.raises(StoreError) as err, store.open_store(tmp_db, lock_timeout_s=0.6):
        pass
    waited = time.monotonic() - started
    message = str(err.value)
    assert 0.6 <= waited < 3.0
    assert "\n" not in message and "locked by another process" in message
    assert f"pid {holder.proc.pid}" in message and "0.6 s" in message


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
def test_a_short_foreign_hold_is_ridden_out_by_the_retry(tmp_db: str, children: list[Child]) -> None:
    land(tmp_db, 1)
    holder = Child(f"""
        import time, duckdb
        con = duckdb.connect({tmp_db!r})
        print("locked", flush=True)
        time.sleep(0.5)
        con.close()
        time.sleep(30)
    """)
    children.append(holder)
    assert holder.read() == "locked"
    started = time.monotonic()
    land(tmp_db, 2, lock_timeout_s=10)
    assert 0.3 <= time.monotonic() - started < 5.0
    with store.open_store(tmp_db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM rounds").fetchall() == [(2,)]


def test_the_snapshot_copy_keeps_the_writer_lock(tmp_db: str) -> None:
    """POSIX drops all of a process's fcntl locks on a file when any descriptor of it closes; the copy
    must therefore hold its descriptor until DuckDB's connection is closed."""
    land(tmp_db, 1)
    path = Path(tmp_db)
    con = duckdb.connect(tmp_db)
    con.execute("CHECKPOINT")
    copy = SnapshotCopy.take(path)
    probe = (
        f"import duckdb\ntry:\n duckdb.connect({tmp_db!r}, read_only=True)\n print('opened')\n"
        "except duckdb.IOException:\n print('locked')"
    )
    during = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    con.close()
    published = copy.finish()
    assert during.stdout.strip() == "locked"
    assert published == store.snapshot_path(tmp_db) and copy.error is None


def test_snapshot_is_republished_only_when_the_file_changed(tmp_db: str) -> None:
    land(tmp_db, 1)
    snap = store.snapshot_path(tmp_db)
    first = snap.stat().st_ino
    with store.open_store(tmp_db) as con:
        con.execute("SELECT count(*) FROM attempts").fetchall()
    assert snap.stat().st_ino == first  # a read-only use of a write window copies nothing
    with store.open_store(tmp_db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM rounds").fetchall() == [(1,)]
    assert snap.stat().st_ino == first
    land(tmp_db, 2)
    assert snap.stat().st_ino != first
    assert not list(snap.parent.glob("*.tmp-*"))


def test_a_failed_window_does_not_publish(tmp_db: str) -> None:
    land(tmp_db, 1)
    snap = store.snapshot_path(tmp_db)
    before = snap.stat().st_ino
    with pytest.raises(RuntimeError), store.open_store(tmp_db) as con:
        store.set_setting(con, store.MODE_KEY, "enforce")
        raise RuntimeError("flow crashed mid-window")
    assert snap.stat().st_ino == before
    land(tmp_db, 2)  # the next window publishes whatever was committed
    con = store.open_snapshot(tmp_db)
    try:
        assert con.execute("SELECT value FROM settings").fetchall() == [("enforce",)]
    finally:
        con.close()


def test_threads_of_one_process_share_windows_safely(tmp_db: str) -> None:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            land(tmp_db, n)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    con = store.open_snapshot(tmp_db)
    try:
        assert con.execute("SELECT count(*) FROM rounds WHERE status = 'complete'").fetchall() == [(6,)]
    finally:
        con.close()


def test_open_snapshot_without_a_database_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as err:
        store.open_snapshot(tmp_path / "missing.duckdb")
    assert "\n" not in str(err.value) and "missing.duckdb" in str(err.value)
