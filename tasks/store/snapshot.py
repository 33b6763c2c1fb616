"""The read-only snapshot analysts open instead of the live file (docs/schema.md "Concurrency").

DuckDB lets one process hold a file for writing and then refuses *every* other open, read-only included.
A notebook holding the live file would therefore block each round. So the writer, at the end of each write
window, copies the checkpointed file to ``<stem>.snapshot.duckdb.tmp-<pid>`` and ``os.replace``s it over
``<stem>.snapshot.duckdb``. A reader that has the old snapshot open keeps its inode (Linux) and is never in
the writer's way; a reader that reconnects sees the new round.

POSIX trap: DuckDB's lock is an fcntl lock, and closing *any* descriptor of the file releases all of this
process's fcntl locks on it. So the copy keeps its source descriptor open until DuckDB's connection is
closed (``SnapshotCopy.finish``); closing it earlier would silently drop the writer's lock mid-window.
"""

from __future__ import annotations

import os
from pathlib import Path

SNAPSHOT_SUFFIX = ".snapshot.duckdb"


def snapshot_path(db_path: str | os.PathLike[str]) -> Path:
    """``canary.duckdb`` -> ``canary.snapshot.duckdb`` (other names get the suffix appended)."""
    path = Path(db_path)
    if path.suffix == ".duckdb":
        return path.with_name(path.stem + SNAPSHOT_SUFFIX)
    return path.with_name(path.name + SNAPSHOT_SUFFIX)


def file_signature(path: Path) -> tuple[int, int] | None:
    """(mtime_ns, size) of a file, None when it does not exist."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)


def is_snapshot_stale(db_path: Path) -> bool:
    """True when the live file differs from what the snapshot was copied from (or there is none).

    The snapshot is stamped with the source's mtime, so equal (mtime, size) means nothing was written since.
    """
    return file_signature(snapshot_path(db_path)) != file_signature(db_path)


class SnapshotCopy:
    """A byte copy of a checkpointed database file, taken while the caller still holds DuckDB's lock.

    Usage (inside the write window, after CHECKPOINT): ``copy = SnapshotCopy.take(db)``; close the DuckDB
    connection; then ``copy.finish()`` closes the source descriptor and atomically publishes the snapshot.
    A failed copy never fails the window (the data is landed): ``finish`` returns None and ``error`` says why.
    """

    def __init__(self, db_path: Path, source_fd: int, tmp_path: Path, mtime_ns: int) -> None:
        self.db_path = db_path
        self.error: str | None = None
        self._source_fd = source_fd
        self._tmp_path = tmp_path
        self._mtime_ns = mtime_ns

    @classmethod
    def take(cls, db_path: Path) -> SnapshotCopy:
        target = snapshot_path(db_path)
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        source_fd = os.open(db_path, os.O_RDONLY)
        st = os.fstat(source_fd)
        copy = cls(db_path, source_fd, tmp, st.st_mtime_ns)
        try:
            _copy_fd_to(source_fd, st.st_size, tmp)
        except OSError as exc:
            # Keep source_fd open regardless: closing it now would drop the writer's fcntl lock.
            copy.error = f"snapshot copy failed: {exc}"
            tmp.unlink(missing_ok=True)
        return copy

    def finish(self) -> Path | None:
        """Call after the DuckDB connection is closed: release the descriptor and publish atomically."""
        os.close(self._source_fd)
        if self.error is not None:
            return None
        target = snapshot_path(self.db_path)
        try:
            os.utime(self._tmp_path, ns=(self._mtime_ns, self._mtime_ns))
            os.replace(self._tmp_path, target)
        except OSError as exc:
            self.error = f"snapshot publish failed: {exc}"
            self._tmp_path.unlink(missing_ok=True)
            return None
        return target


def _copy_fd_to(source_fd: int, size: int, tmp: Path) -> None:
    out_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        offset = 0
        while offset < size:
            copied = os.copy_file_range(source_fd, out_fd, size - offset, offset, offset)
            if copied == 0:
                break
            offset += copied
        os.fsync(out_fd)
    finally:
        os.close(out_fd)
