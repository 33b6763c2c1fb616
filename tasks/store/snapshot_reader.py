"""The analysts' read-only connection to the snapshot of the database (tasks/store/snapshot.py publishes it): it
never blocks a round."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from tasks.errors import StoreError
from tasks.store.connection import open_store
from tasks.store.snapshot import snapshot_path


def open_snapshot(db_path: str | os.PathLike[str],
                  into: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the analysts' snapshot of ``db_path`` (never blocks a round).

    The connection shows the snapshot as of when it was opened; call again to see newer rounds (each
    call opens the file anew). If no snapshot exists yet but the database does, one is published first
    (a short write window). Its catalog is named ``snapshot``; unqualified table and view names work.
    `into`: attach to that in-memory connection (returned) instead of a new instance, which a process reading
    every new snapshot keeps (creating and closing an instance costs ~18 ms: tasks/metrics/exporter.py); let the
    snapshot go with `detach_snapshot`.
    """
    target = snapshot_path(db_path)
    if not target.exists():
        if not Path(db_path).exists():
            raise StoreError(f"store: no database at {db_path} yet; run a round first")
        with open_store(db_path, snapshot=True):
            pass
    # A fresh in-memory instance that ATTACHes the file: duckdb.connect(path) would reuse this process's
    # cached instance of an older snapshot still open elsewhere (a notebook's earlier connection), and
    # so show the old inode instead of the round that just landed.
    con = duckdb.connect() if into is None else into
    try:
        con.execute(f"ATTACH '{_sql_string(target)}' AS snapshot (READ_ONLY)")
        con.execute("USE snapshot")
        con.execute("SET TimeZone = 'UTC'")
    except duckdb.Error as exc:
        if into is None:
            con.close()
        else:
            detach_snapshot(con)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StoreError(f"store: cannot open snapshot {target}: {first}") from exc
    return con


def detach_snapshot(con: duckdb.DuckDBPyConnection) -> None:
    """Let go of the snapshot `open_snapshot(..., into=con)` attached (the file is closed; `con` stays)."""
    con.execute("USE memory")
    con.execute("DETACH DATABASE IF EXISTS snapshot")


def _sql_string(path: Path) -> str:
    return str(path).replace("'", "''")
