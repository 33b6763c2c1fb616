"""Short write windows on the DuckDB file: open (with a bounded wait for the lock), migrate, yield, close.

    with open_store(cfg.db_path) as con:
        land_round(con, info, attempts, endpoints=endpoints)

DuckDB allows one writing process per file and then refuses every other open, read-only included
(docs/design.md "Platform notes"). So a window opens the file and closes it again, unless a cycle keeps it open
between its rounds' windows (`kept_open`, below); a window that finds the lock held by another process says so
(`<db>.waiting`, a shared `flock` while it waits) and retries with a short backoff up to ``lock_timeout_s``, then
raises ``StoreError`` with one line (`busy`). A file that opens but fails on read or write (truncated, not a
DuckDB file, a full disk) raises ``StoreError`` too, not busy, wherever in the window DuckDB notices it:
opening, migrating, a read in the caller's block, or the closing checkpoint. Inside one process, windows on
the same file are serialised by a lock (nesting in one thread is allowed). At the end of the outermost
successful write window the file is checkpointed and, if it changed, the analysts' snapshot is republished
(tasks/store/snapshot.py).

`kept_open(db)` (a cycle): the first window opens, migrates and keeps one connection; every later window is a
cursor on it (~0.4 ms instead of the 30-60 ms of CPU and wall a connect, a migration check and a closing
checkpoint cost), its transaction as short as before. The file is let go (the connection closed, DuckDB
checkpoints it) as soon as another process announces that it waits for it (checked at the end of every window and
every `CHECK_S`), after `LINGER_S` without a window, before a snapshot copy is published, and when the block
ends; a window after that opens the file again, once the waiting processes had their turn. So the router's live
counts, `canary status` and the snapshot still get the file within a window's time.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from tasks.errors import StoreError
from tasks.store.connect import broken_file, connect, is_broken_file, waiting_path
from tasks.store.migrations import LATEST_VERSION, migrate, schema_version
from tasks.store.rows import Connection
from tasks.store.snapshot import SnapshotCopy, is_snapshot_stale

#: How long a window waits for another process to release the file before giving up, seconds. A round's
#: own windows last milliseconds; 15 s rides out a concurrent CLI command or a snapshot copy, and still
#: fails fast enough for an operator to see why (usually a notebook holding the live file).
DEFAULT_LOCK_TIMEOUT_S = 15.0
#: A kept file (`kept_open`) is let go after this long without a window, seconds.
LINGER_S = 1.0
#: How often a kept file's watcher looks for waiting processes and idleness, seconds.
CHECK_S = 0.1
_log = logging.getLogger("tasks.store")
#: How long each recent window held the file (path, read_only, seconds): what a benchmark reports as the time
#: the lock is held per round. The snapshot copy happens after close and is not counted.
HELD_S: collections.deque[tuple[str, bool, float]] = collections.deque(maxlen=10_000)
_registry_lock = threading.Lock()
_process_locks: dict[str, threading.RLock] = {}
_depths: dict[str, int] = {}
_held: dict[str, Connection] = {}  # files this process holds open (held_open): path -> its connection
@contextmanager
def open_store(
    db_path: str | os.PathLike[str],
    *,
    read_only: bool = False,
    snapshot: bool | None = None,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> Iterator[Connection]:
    """Open ``db_path`` for one short window and yield a migrated connection (session TimeZone UTC).

    ``snapshot``: None publishes the analysts' snapshot when the file changed (or none exists yet), True
    always, False never. Read-only windows never publish. Do not keep the connection, or cursors made from
    it, beyond the ``with`` block.
    """
    path = Path(db_path).expanduser().resolve()
    key = str(path)
    lock = _process_lock(key)
    if not lock.acquire(timeout=lock_timeout_s):
        raise StoreError(f"store: {path} stayed busy in this process for more than {lock_timeout_s:g} s", busy=True)
    try:
        outermost = _depths.get(key, 0) == 0
        _depths[key] = _depths.get(key, 0) + 1
        con, kept, held = _window_connection(path, read_only, lock_timeout_s, sleep, monotonic)
        opened = time.monotonic()
        copy: SnapshotCopy | None = None
        try:
            if not held:  # a held file was migrated, and its TimeZone set, when this process took it
                _prepare(con, path, read_only)
            yield con
            if outermost and not read_only and (snapshot is not False or not held):
                copy = _checkpoint(con, path, snapshot)
        except duckdb.Error as exc:
            if kept is not None:
                kept.release()  # a kept connection that failed is not reused: the next window opens afresh
            if not is_broken_file(exc):
                raise
            raise broken_file(path, exc) from exc
        finally:
            con.close()
            if outermost:
                HELD_S.append((key, read_only, time.monotonic() - opened))
                if kept is not None and (copy is not None or kept.someone_waits()):
                    kept.release()  # the copy's descriptor must not close under a kept lock (snapshot.py)
            if copy is not None and copy.finish() is None:
                _log.warning("store: %s", copy.error)
    finally:
        _depths[key] -= 1
        lock.release()


def _window_connection(
    path: Path, read_only: bool, timeout_s: float, sleep: Callable[[float], None], monotonic: Callable[[], float],
) -> tuple[Connection, _Kept | None, bool]:
    """The window's connection (a cursor when this process keeps or holds the file), the kept file if any, and
    whether this process has the file migrated already. A read never creates a database; a read of a file not
    migrated yet migrates it first, in a write window of its own."""
    key = str(path)
    if read_only and not path.exists():  # a read never creates a database (or its directory)
        raise StoreError(f"store: no database at {path}")
    kept = _kept.get(key)
    held = key in _held or kept is not None  # this process has the file, migrated (or migrates it at open)
    if read_only and not held and not _is_migrated(path, timeout_s, sleep, monotonic):
        with open_store(path, snapshot=False, lock_timeout_s=timeout_s, sleep=sleep, monotonic=monotonic):
            pass
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    con = kept.cursor(timeout_s, sleep, monotonic) if kept is not None else \
        _connect(path, read_only, timeout_s, sleep, monotonic)
    return con, kept, held


def _prepare(con: Connection, path: Path, read_only: bool) -> None:
    """A fresh connection: TimeZone UTC, and the schema migrated (a read: checked)."""
    con.execute("SET TimeZone = 'UTC'")
    if read_only:
        _require_version(con, path)
    else:
        migrate(con)


def _checkpoint(con: Connection, path: Path, snapshot: bool | None) -> SnapshotCopy | None:
    """The end of the outermost write window: checkpoint the file, and take the analysts' snapshot copy when
    `snapshot` asks or (None) the snapshot is stale."""
    con.execute("CHECKPOINT")  # held open (a history, a cycle) and no snapshot wanted: DuckDB's own
    # wal autocheckpoint and the final close do it
    if snapshot or (snapshot is None and is_snapshot_stale(path)):
        return SnapshotCopy.take(path)
    return None


@contextmanager
def held_open(db_path: str | os.PathLike[str]) -> Iterator[None]:
    """Keep ``db_path`` open in this process for the block: each window inside opens a cursor on the one
    database instead of starting DuckDB on the file (30-50 ms), checking its migrations and checkpointing it
    at close (~30 ms).

    Windows, transactions and checkpoints are unchanged; what changes is that no other process can open the
    file until the block ends (DuckDB's one-writer lock). So this is only for a file that nothing else uses
    meanwhile: a history being built into a fresh file (provider_canary/demo/pipeline.py). A round of the real
    canary never holds the file between its windows."""
    path = Path(db_path).expanduser().resolve()
    key = str(path)
    with open_store(path, snapshot=False):  # create and migrate it first, as any first window would
        pass
    con = _connect(path, False, DEFAULT_LOCK_TIMEOUT_S, time.sleep, time.monotonic)
    # For the whole database, so for every window's cursor: UTC as in any window, and one thread. A window's
    # statements are small, and DuckDB's second thread only handed each of them across cores that the
    # history's simulator and probe worker need (its statements: 195 -> 160 ms per round).
    con.execute("SET GLOBAL TimeZone = 'UTC'")
    con.execute("SET threads = 1")
    with _registry_lock:
        _held[key] = con
    try:
        yield
    finally:
        with _registry_lock:
            _held.pop(key, None)
        con.close()


class _Kept:
    """A file a cycle keeps open (`kept_open`): its one connection, opened by the first window that needs it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.con: Connection | None = None
        self.last_used = time.monotonic()
        self._waiting_fd: int | None = None

    def cursor(self, timeout_s: float, sleep: Callable[[float], None], monotonic: Callable[[], float]) -> Connection:
        """A cursor on the kept connection, opened (and migrated) first when the file was let go: after the
        processes that announced they wait for it (they asked first)."""
        if self.con is None:
            deadline = monotonic() + timeout_s
            while self.someone_waits() and monotonic() < deadline:
                sleep(0.02)
            con = _connect(self.path, False, max(0.0, deadline - monotonic()), sleep, monotonic)
            try:
                con.execute("SET GLOBAL TimeZone = 'UTC'")
                migrate(con)
            except duckdb.Error as exc:
                con.close()
                if not is_broken_file(exc):
                    raise
                raise broken_file(self.path, exc) from exc
            self.con = con
        self.last_used = time.monotonic()
        return self.con.cursor()

    def someone_waits(self) -> bool:
        """True while another process holds the shared flock of `<db>.waiting` (it waits for the file)."""
        if self._waiting_fd is None:
            try:
                self._waiting_fd = os.open(waiting_path(self.path), os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                return False
        try:
            fcntl.flock(self._waiting_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(self._waiting_fd, fcntl.LOCK_UN)
        return False

    def release(self) -> None:
        """Let go of the file (the caller holds the process lock of the path)."""
        if self.con is not None:
            con, self.con = self.con, None
            with contextlib.suppress(duckdb.Error):
                con.close()

    def close(self) -> None:
        self.release()
        if self._waiting_fd is not None:
            os.close(self._waiting_fd)
            self._waiting_fd = None


_kept: dict[str, _Kept] = {}


@contextmanager
def kept_open(db_path: str | os.PathLike[str]) -> Iterator[None]:
    """Keep ``db_path`` open between this process's windows for the block (module docstring): a cycle's. Nothing
    is opened until a window needs the file; a block inside another one of the same file changes nothing."""
    path = Path(db_path).expanduser().resolve()
    key = str(path)
    lock = _process_lock(key)
    with _registry_lock:
        if key in _kept or key in _held:
            nested = True
        else:
            nested = False
            _kept[key] = kept = _Kept(path)
    if nested:
        yield
        return
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_kept, args=(kept, lock, stop), name="store-kept", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
        with lock:
            with _registry_lock:
                _kept.pop(key, None)
            kept.close()


def _watch_kept(kept: _Kept, lock: threading.RLock, stop: threading.Event) -> None:
    """Let go of a kept file when another process waits for it or no window came for LINGER_S."""
    while not stop.wait(CHECK_S):
        if kept.con is None:
            continue
        if (time.monotonic() - kept.last_used < LINGER_S and not kept.someone_waits()) or not lock.acquire(False):
            continue  # in use (a window holds the lock: it checks for waiters itself at its end)
        try:
            kept.release()
        finally:
            lock.release()


def _connect(path: Path, read_only: bool, timeout_s: float, sleep: Callable[[float], None],
             monotonic: Callable[[], float]) -> Connection:
    """`connect` (tasks/store/connect.py), or a cursor on the database when this process holds it open
    (`held_open`)."""
    held = _held.get(str(path))
    return held.cursor() if held is not None else connect(path, read_only, timeout_s, sleep, monotonic)


def _process_lock(key: str) -> threading.RLock:
    with _registry_lock:
        return _process_locks.setdefault(key, threading.RLock())


def _is_migrated(
    path: Path, timeout_s: float, sleep: Callable[[float], None], monotonic: Callable[[], float]
) -> bool:
    if not path.exists():
        return False
    con = _connect(path, True, timeout_s, sleep, monotonic)
    try:
        return schema_version(con) == LATEST_VERSION
    except duckdb.Error as exc:
        if not is_broken_file(exc):
            raise
        raise broken_file(path, exc) from exc
    finally:
        con.close()


def _require_version(con: Connection, path: Path) -> None:
    version = schema_version(con)
    if version != LATEST_VERSION:
        raise StoreError(f"store: {path} is at schema version {version}, expected {LATEST_VERSION}")


