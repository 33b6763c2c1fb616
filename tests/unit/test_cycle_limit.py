"""The cycle slot is per database file: shards never wait for each other, one file keeps `canary-cycle`."""

from __future__ import annotations

import pytest

from flows.cycle import CYCLE_LIMIT, cycle_limit_name

pytestmark = pytest.mark.unit


def test_the_default_database_keeps_the_slot_every_single_file_setup_uses() -> None:
    assert CYCLE_LIMIT == "canary-cycle"
    assert cycle_limit_name("canary.duckdb") == "canary-cycle"
    assert cycle_limit_name("/var/lib/canary/canary.duckdb") == "canary-cycle"


def test_each_shard_file_has_its_own_slot() -> None:
    names = {cycle_limit_name(p) for p in ("/data/shard-a.duckdb", "/data/shard-b.duckdb", "canary.duckdb")}
    assert names == {"canary-cycle-shard-a", "canary-cycle-shard-b", "canary-cycle"}
    assert cycle_limit_name("~/Canary B.duckdb") == "canary-cycle-canary-b"
    assert cycle_limit_name("/x/...duckdb") == "canary-cycle-db"
    # one stem in two directories: one slot (the cycles wait for each other, they never clash)
    assert cycle_limit_name("/a/prod.duckdb") == cycle_limit_name("/b/prod.duckdb") == "canary-cycle-prod"
