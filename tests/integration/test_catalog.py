"""One catalog over every shard's snapshot (tasks/store/catalog.py), on real DuckDB files landed through the
store's own writes."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks import store
from tasks.core.types import Mode, RoundInfo
from tasks.errors import StoreError
from tasks.store.catalog import open_catalog, shard_names, union_sql

pytestmark = pytest.mark.integration

T0 = datetime(2026, 8, 1, 8, 0, tzinfo=UTC)
SHARDS = {"shard-a": ["acme/a-1", "acme/a-2"], "shard-b": ["acme/b-1"]}
TAGS = ("alpha", "beta", "gamma")


def land(db: Path, models: list[str], rounds: int = 2) -> None:
    with store.open_store(db) as con:
        for m in models:
            for i in range(rounds):
                ts = T0 + timedelta(minutes=30 * i)
                info = RoundInfo(round_id=f"{m}@{ts:%H%M}", model=m, round_ts=ts, mode=Mode.ENFORCE)
                store.land_round(con, info, [], endpoints=list(TAGS), status="complete", finished_at=ts)


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    paths = []
    for name, models in SHARDS.items():
        land(tmp_path / f"{name}.duckdb", models)
        paths.append(tmp_path / f"{name}.duckdb")
    return paths


def test_every_model_of_every_shard_once_and_each_shards_views_over_its_own_rows(shards: list[Path]) -> None:
    own = {}
    for db in shards:
        with store.open_snapshot(db) as single:
            own[db.stem] = single.execute("SELECT count(*) FROM v_endpoint_rounds").fetchone()[0]
    con = open_catalog(shards)
    rounds = con.execute("SELECT shard, model, count(*) FROM rounds GROUP BY ALL ORDER BY ALL").fetchall()
    assert rounds == [("shard-a", "acme/a-1", 2), ("shard-a", "acme/a-2", 2), ("shard-b", "acme/b-1", 2)]
    # A shard's view names `rounds` without a catalog: it must read its own shard, not the catalog's union.
    per_shard = dict(con.execute("SELECT shard, count(*) FROM v_endpoint_rounds GROUP BY shard").fetchall())
    assert per_shard == own == {"shard-a": 2 * 2 * 3, "shard-b": 2 * 3}
    listed = con.execute("SELECT shard, models, shared_models FROM catalog_shards ORDER BY shard").fetchall()
    assert listed == [("shard-a", ["acme/a-1", "acme/a-2"], []), ("shard-b", ["acme/b-1"], [])]
    con.close()


def test_the_catalog_reads_snapshots_only_and_sees_new_rounds_when_reopened(shards: list[Path]) -> None:
    con = open_catalog({"a": shards[0], "b": shards[1]})
    before = {p: p.stat().st_mtime_ns for p in shards}
    land(shards[1], ["acme/b-2"], rounds=1)  # the writer is never blocked by an open catalog
    assert con.execute("SELECT count(*) FROM rounds WHERE model = 'acme/b-2'").fetchone()[0] == 0
    con.close()
    assert shards[0].stat().st_mtime_ns == before[shards[0]]  # reading wrote nothing
    with open_catalog({"a": shards[0], "b": shards[1]}) as again:
        assert again.execute("SELECT shard FROM rounds WHERE model = 'acme/b-2'").fetchall() == [("b",)]


def test_a_model_in_two_shards_is_named_and_a_relation_of_one_shard_only_is_still_there(
    shards: list[Path], tmp_path: Path
) -> None:
    land(shards[1], ["acme/a-1"], rounds=1)
    with store.open_store(shards[1]) as con:
        con.execute("CREATE TABLE extra (k INTEGER)")  # as if shard-b ran one migration more
        con.execute("INSERT INTO extra VALUES (7)")
    with open_catalog(shards) as con:
        shared = con.execute("SELECT shard, shared_models FROM catalog_shards ORDER BY shard").fetchall()
        assert shared == [("shard-a", ["acme/a-1"]), ("shard-b", ["acme/a-1"])]
        assert con.execute("SELECT shard, k FROM extra").fetchall() == [("shard-b", 7)]


def test_a_missing_shard_is_one_line_and_creates_nothing(shards: list[Path], tmp_path: Path) -> None:
    missing = tmp_path / "shard-c.duckdb"
    with pytest.raises(StoreError, match="no database at .*shard-c.duckdb"):
        open_catalog([*shards, missing])
    assert not missing.exists()
    with pytest.raises(StoreError, match="at least one shard"):
        open_catalog([])


def test_shard_names_and_the_union_sql() -> None:
    assert list(shard_names(["x/canary-a.duckdb", "y/canary-a.duckdb", "z/b.db"])) == ["canary-a", "canary-a-2", "b"]
    sql = union_sql("rounds", [("a", "shard_a"), ("o'b", "shard_o_b")])
    assert "SELECT 'o''b' AS shard, * FROM \"shard_o_b\".main.\"rounds\"" in sql
    assert sql.count("UNION ALL BY NAME") == 1 and "TEMP" not in sql


def test_canary_catalog_prints_a_line_per_shard_and_runs_a_query(shards: list[Path]) -> None:
    canary = [sys.executable, "-m", "provider_canary.cli.main", "catalog", *map(str, shards)]
    out = subprocess.run(canary, capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("shard-a: 2 models, 4 complete rounds, last round 2026-08-01 08:30 UTC")
    assert lines[1].startswith("shard-b: 1 models, 2 complete rounds")
    out = subprocess.run([*canary, "--sql", "SELECT shard, count(DISTINCT model) n FROM rounds GROUP BY 1 ORDER BY 1",
                          "--json"], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    assert '"n": 2' in out.stdout and '"shard": "shard-b"' in out.stdout
    bad = subprocess.run([*canary, "--sql", "SELECT nope"], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).parents[2])
    assert bad.returncode == 2 and bad.stderr.startswith("canary: catalog: the query failed: ")
    assert "Traceback" not in bad.stderr
