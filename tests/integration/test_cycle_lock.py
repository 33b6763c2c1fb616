"""The database's cycle lock (tasks/orchestration/cycle_lock.py): one holder at a time, across processes; a waiter is
told who holds it and gives up with one line naming the holder; the record a dead holder left is reported to the next
holder, and a clean end leaves none. Real files and processes, a fake clock for the wait."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.orchestration.cycle_lock import CycleLockTimeout, Holder, cycle_lock, lock_path
from tasks.runtime.liveness import ProcessId

pytestmark = pytest.mark.integration

HOLD = (
    "import sys, time\n"
    "from tasks.orchestration.cycle_lock import cycle_lock\n"
    "with cycle_lock(sys.argv[1], 5) as lock:\n"
    "    lock.record(flow_run_id='run-of-the-holder')\n"
    "    print('held', flush=True)\n"
    "    sys.stdin.read()\n"
)


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def test_a_second_cycle_waits_names_the_holder_and_gives_up(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        told: list[Holder | None] = []
        clock = FakeClock()
        with pytest.raises(CycleLockTimeout) as caught:
            with cycle_lock(db, 30, on_wait=told.append, sleep=clock.sleep, monotonic=clock.monotonic):
                pytest.fail("the lock was held by another process")
        assert len(told) == 1 and told[0] is not None and told[0].process.pid == holder.pid
        assert f"pid {holder.pid}" in str(caught.value) and "after 30 s" in str(caught.value)
        assert "run-of-the-holder" in str(caught.value)
    finally:
        holder.communicate("", timeout=10)
    with cycle_lock(db, 1) as lock:  # released with its holder
        assert lock.previous is None  # a clean end leaves no record
    assert lock_path(db).read_text() == ""


def test_the_record_of_a_holder_that_died_reaches_the_next_holder(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    record = {**ProcessId(pid, ProcessId.current().host, 1).as_json(), "flow_run_id": "f", "lease_id": "l"}
    lock_path(db).write_text(json.dumps(record))  # what a SIGKILLed cycle leaves (the kernel dropped its lock)
    with cycle_lock(db, 1) as lock:
        assert lock.previous is not None
        assert (lock.previous.process.pid, lock.previous.flow_run_id, lock.previous.lease_id) == (pid, "f", "l")
        lock.record(flow_run_id="mine")
        assert json.loads(lock_path(db).read_text())["flow_run_id"] == "mine"
