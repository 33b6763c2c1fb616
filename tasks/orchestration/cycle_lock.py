"""One cycle per database at a time on this machine, with or without a Prefect API: a file lock beside the database.

    with cycle_lock(db_path, wait_s, on_wait=log) as lock:   # `<db>.cycle.lock`, flock(2), held by the cycle
        lock.previous          # the record a cycle left when it died holding the lock (None after a clean end)
        lock.record(flow_run_id=..., lease_id=..., round_lease_id=...)

Two `canary run` without PREFECT_API_URL each start a private Prefect server, so the Prefect slot of the cycle
(tasks/orchestration/cycle_turn.py) is not shared between them; the kernel's lock is. The lock goes with its process
(SIGKILL included), so it can never be stale. A second cycle waits for it, as long as it would wait for the Prefect
slot, then gives up with one line naming the holder (`CycleLockTimeout`). While it holds the lock a cycle records who
it is (pid, host, process start, its flow run, its slot's lease and its rounds' slots' lease) in the file, and empties
the file when it ends: a record found by the next holder names a cycle that died holding the lock, whose leases the
next cycle releases at once (tasks/orchestration/round_slots.py `heal_dead_cycle`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.runtime.clock import utcnow
from tasks.runtime.liveness import ProcessId

LOCK_SUFFIX = ".cycle.lock"
#: Between two tries of a held lock, seconds.
POLL_S = 0.2


def lock_path(db_path: str | os.PathLike[str]) -> Path:
    path = Path(db_path).expanduser().resolve()
    return path.with_name(path.name + LOCK_SUFFIX)


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) the lock, as its record says."""

    process: ProcessId
    flow_run_id: str | None = None
    lease_id: str | None = None  # the cycle slot's lease
    started_at: str | None = None
    #: the lease of its rounds' slots (tasks/orchestration/round_slots.py `cycle_round_slots`)
    round_lease_id: str | None = None

    def describe(self) -> str:
        since = f" since {self.started_at}" if self.started_at else ""
        run = f", flow run {self.flow_run_id}" if self.flow_run_id else ""
        return f"{self.process.describe()}{since}{run}"


class CycleLockTimeout(Exception):
    """Another cycle of the database held the lock for the whole wait."""

    def __init__(self, path: Path, wait_s: float, holder: Holder | None) -> None:
        who = holder.describe() if holder else "another process"
        super().__init__(f"the previous cycle of this database ({who}) still held {path} after {wait_s:.0f} s")
        self.holder = holder


class CycleLock:
    """A held lock: its file descriptor, and the record of a holder that died (`previous`)."""

    def __init__(self, fd: int, previous: Holder | None) -> None:
        self._fd = fd
        self.previous = previous
        self._record: dict[str, Any] = {**ProcessId.current().as_json(), "started_at": utcnow().isoformat()}

    def record(self, **fields: str | None) -> None:
        """Add `fields` to this holder's record (best effort: a full disk keeps the lock, not the record)."""
        self._record.update(fields)
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, json.dumps(self._record).encode(), 0)

    def clear(self) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)


def _read_holder(fd: int) -> Holder | None:
    try:
        raw = os.pread(fd, 65536, 0)
        obj = json.loads(raw) if raw.strip() else None
    except (OSError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    return Holder(ProcessId.from_json(obj), obj.get("flow_run_id"), obj.get("lease_id"), obj.get("started_at"),
                  obj.get("round_lease_id"))


@contextlib.contextmanager
def cycle_lock(
    db_path: str | os.PathLike[str], wait_s: float, *, on_wait: Callable[[Holder | None], None] | None = None,
    sleep: Callable[[float], None] = time.sleep, monotonic: Callable[[], float] = time.monotonic,
) -> Iterator[CycleLock]:
    """Hold the database's cycle lock for the block, waiting up to `wait_s` (`on_wait` is told once, with the
    holder, when it must wait); CycleLockTimeout when it stays held."""
    path = lock_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
            if not told and on_wait is not None:
                on_wait(_read_holder(fd))
                told = True
            if monotonic() >= deadline:
                raise CycleLockTimeout(path, wait_s, _read_holder(fd))
            sleep(POLL_S)
        previous = _read_holder(fd)
        if previous is not None and not previous.process.is_gone():
            previous = None  # another host's record (a shared mount): not ours to call dead
        lock = CycleLock(fd, previous)
        lock.record()
        try:
            yield lock
        finally:
            lock.clear()
    finally:
        os.close(fd)  # releases the lock
