"""One catalog over every shard: analysts read the shards' snapshots as if they were one database.

    from tasks.store.catalog import open_catalog
    con = open_catalog(["canary-a.duckdb", "canary-b.duckdb"])      # or {"a": "canary-a.duckdb", ...}
    con.sql("SELECT shard, model, count(*) FROM v_endpoint_rounds GROUP BY ALL")

Each shard (docs/operations.md "Past one machine") is a DuckDB file with one writer, its cycle's. The catalog
is an in-memory DuckDB connection that ATTACHes every shard's analysts' snapshot (`<stem>.snapshot.duckdb`,
tasks/store/snapshot.py) READ_ONLY, as `shard_<name>`, and creates one view per table and view the shards hold
(`rounds`, `attempts`, `v_endpoint_rounds`, `v_suspensions`, ...): the UNION ALL BY NAME of that relation in
every shard that has it, with a first column `shard`. The views live in the connection's own in-memory
database (gone with the connection), not in `temp`: a shard's view names its tables without a catalog, and
DuckDB looks such names up in `temp` first, so a TEMP `rounds` would feed every shard's `v_endpoint_rounds`
the rows of all shards (tests/integration/test_catalog.py pins this). So a notebook written for `open_snapshot`
runs unchanged over the catalog (its queries name no catalog), and `WHERE shard = 'a'` narrows it. A shard
one migration behind has NULL in the columns it lacks. `catalog_shards` lists each shard, its files and when
its snapshot was published (the catalog shows each snapshot as of when it was opened, like open_snapshot).

Never blocks a round: only snapshots are opened (a missing one is published first, a short write window, as
open_snapshot does). The shards must hold disjoint models; `catalog_shards.shared_models` names any model
found in more than one shard (its history is then split between them, which is an operator's mistake).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from tasks.errors import StoreError
from tasks.store.snapshot import snapshot_path

ShardPaths = Mapping[str, str | os.PathLike[str]] | Sequence[str | os.PathLike[str]]


def shard_names(paths: Sequence[str | os.PathLike[str]]) -> dict[str, Path]:
    """Shard name per database file: its stem (`canary-b.duckdb` -> `canary-b`), made unique with `-2`, ..."""
    out: dict[str, Path] = {}
    for p in paths:
        base = Path(p).stem or "shard"
        name, n = base, 1
        while name in out:
            n += 1
            name = f"{base}-{n}"
        out[name] = Path(p)
    return out


def _alias(name: str) -> str:
    return "shard_" + re.sub(r"\W", "_", name)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def union_sql(relation: str, shards: Sequence[tuple[str, str]]) -> str:
    """The catalog view of `relation` over `shards` ((shard name, attached alias), each holding it)."""
    parts = [f"SELECT {_literal(name)} AS shard, * FROM {_ident(alias)}.main.{_ident(relation)}"
             for name, alias in shards]
    return f"CREATE OR REPLACE VIEW memory.main.{_ident(relation)} AS\n" + "\nUNION ALL BY NAME\n".join(parts)


def _ensure_snapshot(db_path: Path) -> Path:
    target = snapshot_path(db_path)
    if not target.exists():
        if not db_path.exists():
            raise StoreError(f"store: no database at {db_path} yet; run a round of that shard first")
        from tasks.store.connection import open_store

        with open_store(db_path, snapshot=True):
            pass
    return target


def open_catalog(shards: ShardPaths, *, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory, read-only view of every shard's snapshot as one catalog (module doc). StoreError (one
    line) when a shard has no database or its snapshot cannot be opened. `threads`: DuckDB's threads for its
    queries (default: one per core)."""
    named = ({str(k): Path(v) for k, v in shards.items()} if isinstance(shards, Mapping)
             else shard_names(list(shards)))
    if not named:
        raise StoreError("store: a catalog needs at least one shard's database")
    con = duckdb.connect() if threads is None else duckdb.connect(config={"threads": threads})
    try:
        con.execute("SET TimeZone = 'UTC'")
        relations: dict[str, list[tuple[str, str]]] = {}
        rows = []
        for name, db in named.items():
            snap = _ensure_snapshot(db)
            alias = _alias(name)
            try:
                con.execute(f"ATTACH {_literal(str(snap))} AS {_ident(alias)} (READ_ONLY)")
            except duckdb.Error as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise StoreError(f"store: cannot open the snapshot {snap} of shard {name}: {first}") from exc
            found = con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = ? AND table_schema = "
                "'main' ORDER BY table_name", [alias]).fetchall()
            for (relation,) in found:
                relations.setdefault(relation, []).append((name, alias))
            published = datetime.fromtimestamp(snap.stat().st_mtime, UTC)
            rows.append((name, str(db), str(snap), published))
        for relation, holders in relations.items():
            con.execute(union_sql(relation, holders))
        con.execute("CREATE TABLE memory.main.catalog_shards (shard VARCHAR, db_path VARCHAR, snapshot VARCHAR, "
                    "snapshot_at TIMESTAMPTZ, models VARCHAR[], shared_models VARCHAR[])")
        con.executemany("INSERT INTO catalog_shards VALUES (?, ?, ?, ?, [], [])", rows)
        if "rounds" in relations:
            con.execute("""
                UPDATE catalog_shards c SET models = m.models, shared_models = m.shared FROM (
                    SELECT s.shard, list_sort(list(DISTINCT r.model)) AS models,
                           coalesce(list_sort(list(DISTINCT r.model) FILTER (WHERE r.model IN (
                               SELECT model FROM rounds GROUP BY model HAVING count(DISTINCT shard) > 1))),
                               []) AS shared
                    FROM catalog_shards s JOIN rounds r USING (shard) GROUP BY s.shard) m
                WHERE c.shard = m.shard""")
    except BaseException:
        con.close()
        raise
    return con
