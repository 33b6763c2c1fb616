"""One DuckDB connect to the file, with a bounded wait while another process holds it, and the one line a broken
file gets (tasks/store/connection.py opens its windows with it).

DuckDB allows one writing process per file and then refuses every other open, read-only included. `connect` retries
with a short backoff (`_FIRST_BACKOFF_S`, doubled up to `_MAX_BACKOFF_S`) up to its timeout, then raises
``StoreError`` with one line naming the holder's pid (`busy`). While it waits it says so: a shared flock on
`<db>.waiting` (`WAITING_SUFFIX`), which a process keeping the file open (`kept_open`) watches and lets go of the
file for. A DuckDB error that says the file or its disk failed (`is_broken_file`) becomes `broken_file`'s one line.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from tasks.errors import StoreError
from tasks.store.rows import Connection

#: First pause between lock retries, seconds; doubled after each try, capped at _MAX_BACKOFF_S (a file kept open
#: by a cycle is let go for a waiter within a window's time: its next try should come soon after).
_FIRST_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 0.25
#: The file beside the database on which a process waiting for it holds a shared flock.
WAITING_SUFFIX = ".waiting"

#: DuckDB errors that say the file or the disk under it is broken, not our SQL: a truncated or foreign file reads
#: as IOException (or a Serialization/Internal error, and DuckDB then refuses everything with a Fatal one).
BROKEN_FILE_ERRORS: tuple[type[Exception], ...] = (
    duckdb.IOException, duckdb.FatalException, duckdb.SerializationException, duckdb.InternalException,
)
#: ...and a commit that the disk refused (a full disk: `TransactionException: Failed to commit: Could not write
#: file "x.duckdb.wal": No space left on device`), told apart from a write conflict by DuckDB's own words.
_DISK_WORDS = ("Could not write", "Could not read", "No space left", "Read-only file system", "Input/output error")

#: Each DuckDB connect this process made (path, monotonic time): what a benchmark or a test counts as opens.
OPENED: collections.deque[tuple[str, float]] = collections.deque(maxlen=10_000)


_PID = re.compile(r"\(PID (\d+)\)")


def connect(
    path: Path,
    read_only: bool,
    timeout_s: float,
    sleep: Callable[[float], None],
    monotonic: Callable[[], float],
) -> Connection:
    """duckdb.connect with a bounded backoff while another process holds the file (module docstring)."""
    deadline = monotonic() + timeout_s
    delay = _FIRST_BACKOFF_S
    with contextlib.ExitStack() as waiting:
        while True:
            try:
                con = duckdb.connect(str(path), read_only=read_only)
            except duckdb.IOException as exc:
                if "lock" in str(exc).lower() and not waiting:  # say so: a process keeping the file lets go
                    waiting.enter_context(_announced(path))
                _connect_failed(path, exc, deadline, timeout_s, monotonic)
                sleep(min(delay, max(0.0, deadline - monotonic())))
                delay = min(delay * 2, _MAX_BACKOFF_S)
                continue
            except duckdb.Error as exc:
                raise StoreError(f"store: cannot open {path}: {first_line(str(exc))}") from exc
            OPENED.append((str(path), time.monotonic()))
            return con


def _connect_failed(path: Path, exc: duckdb.IOException, deadline: float, timeout_s: float,
                    monotonic: Callable[[], float]) -> None:
    """A connect DuckDB refused: raise StoreError unless it is the lock and there is time left to wait."""
    message = str(exc)
    if "lock" not in message.lower():
        raise StoreError(f"store: cannot open {path}: {first_line(message)}") from exc
    if deadline - monotonic() <= 0:
        pid = _PID.search(message)
        holder = f" (pid {pid.group(1)})" if pid else ""
        raise StoreError(
            f"store: {path} is locked by another process{holder} for more than {timeout_s:g} s;"
            " notebooks should read open_snapshot() instead of the live file", busy=True,
        ) from exc


def is_broken_file(exc: BaseException) -> bool:
    """A DuckDB error that says the file or its disk failed (not busy, not our SQL)."""
    if isinstance(exc, BROKEN_FILE_ERRORS):
        return True
    return isinstance(exc, duckdb.Error) and any(w in str(exc) for w in _DISK_WORDS)


def broken_file(path: Path, exc: Exception) -> StoreError:
    """The one line for a database that opened but failed on read or write (not busy: an admin must look)."""
    return StoreError(f"store: cannot read or write {path}: {first_line(str(exc))}")


def first_line(message: str) -> str:
    lines = [line for line in message.splitlines() if line.strip()]
    return lines[0].strip() if lines else "unknown error"


def waiting_path(path: Path) -> Path:
    return path.with_name(path.name + WAITING_SUFFIX)


@contextmanager
def _announced(path: Path) -> Iterator[None]:
    """While this process waits for `path`: a shared flock on `<db>.waiting`, so a process keeping the file open
    lets go of it (nothing when the directory cannot take the file: the keeper lets go when idle)."""
    try:
        fd = os.open(waiting_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)
