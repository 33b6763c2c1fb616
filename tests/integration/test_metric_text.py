"""The exposition text rendered per model in the round's save transaction (tasks/store/metric_text.py, migrations
11 and 14) and a scrape that only reads it (tasks/metrics/exporter.py).

Real DuckDB files under tmp: settlements saved through `save_settlement`, scrapes parsed back with
prometheus_client's own parser.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.settle import Prior, Settlement, settle_round
from tasks.core.types import Attempt, Contract, Endpoint, EndpointState, Mode, Usage
from tasks.metrics.exporter import CanaryCollector, exposition
from tasks.store.metric_text import FAMILIES, HISTOGRAMS
from tasks.store.settlement import save_settlement
from tasks.store.snapshot import snapshot_path
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
CFG = CanaryConfig(ttft_s=1, min_hosts=1, exclusions_file=NO_EXCLUSIONS)
STORED = {f.name for f in (*FAMILIES, *HISTOGRAMS) if f.per_model}
Samples = dict[str, list[tuple[tuple[tuple[str, str], ...], float]]]


def _settlement(model: str, ts: datetime) -> Settlement:
    round_id = f"{model}@{ts.isoformat()}"
    endpoints = [Endpoint(model, "a", "A"), Endpoint(model, "b", "B")]
    attempts = [
        Attempt(round_id=round_id, model=model, tag=tag, provider_name=tag.upper(), contract=Contract.TTFT,
                attempt_no=1, started_at=ts, http_status=200, ttft_ms=3000.0 if tag == "b" else 120.0,
                total_ms=3500.0, chunk_count=5, finish_reason="stop", served_provider=tag.upper(),
                text="Hello there, traveller.", usage=Usage(cost=0.001))
        for tag in ("a", "b")
    ]
    prior = Prior(model, Mode.ENFORCE, states={t: EndpointState(model, t, Mode.ENFORCE) for t in ("a", "b")})
    return settle_round(prior, attempts, endpoints, CFG, ts, round_id=round_id)


def _saved(db: Path, *models: str) -> None:
    with store.open_store(db, snapshot=True) as con:
        for model in models:
            save_settlement(con, _settlement(model, T0), landed_at=T0)
    with store.open_store(db, snapshot=True):
        pass


def _scrape(db: Path) -> Samples:
    text = exposition(CanaryCollector([db], CFG)).decode()
    return {f.name: sorted((tuple(sorted(s.labels.items())), s.value) for s in f.samples)
            for f in text_string_to_metric_families(text)}


def _snapshot_sql(db: Path, sql: str) -> None:
    """Change the published snapshot itself (as an older exporter's file would be), keeping its signature new."""
    with duckdb.connect(str(snapshot_path(db))) as con:
        con.execute(sql)


def test_the_save_transaction_renders_each_models_text(tmp_path: Path) -> None:
    db = tmp_path / "canary.duckdb"
    _saved(db, "m", "n")
    with store.open_store(db) as con:
        rows = con.execute("SELECT family, model, body FROM metric_text").fetchall()
    assert {(f, m) for f, m, _ in rows} >= {(f, m) for f in STORED - {"canary_probe_outcome"} for m in "mn"}
    body = {(f, m): b for f, m, b in rows}
    line = 'canary_probe_success{model="m",provider_tag="b",contract="ttft"} 0.0\n'
    assert line in body[("canary_probe_success", "m")]
    assert "model=\"n\"" not in body[("canary_probe_success", "m")]
    assert all(b.endswith("\n") and "# " not in b for b in body.values())  # sample lines only: no header


def test_a_scrape_reads_the_stored_text_not_the_rollup(tmp_path: Path) -> None:
    """A new snapshot's scrape concatenates what the rounds rendered: emptied rollup tables change nothing."""
    db = tmp_path / "canary.duckdb"
    _saved(db, "m")
    before = _scrape(db)
    _snapshot_sql(db, "DELETE FROM metric_counters; DELETE FROM metric_buckets; DELETE FROM metric_last_probe")
    after = _scrape(db)
    assert before["canary_probe_outcomes"] and after["canary_probe_outcomes"] == before["canary_probe_outcomes"]
    hist = "gen_ai_client_operation_time_to_first_chunk_seconds"
    assert after[hist] == before[hist]


def test_a_snapshot_before_migration_14_is_scraped_from_the_rollup_with_the_same_samples(tmp_path: Path) -> None:
    """Its stored text has the labels of before (`endpoint`): the exporter renders the rollup instead."""
    db = tmp_path / "canary.duckdb"
    _saved(db, "m", "n")
    stored = _scrape(db)
    _snapshot_sql(db, "UPDATE metric_text SET body = replace(body, 'provider_tag=', 'endpoint=');"
                      " DELETE FROM schema_migrations WHERE version >= 14")
    rendered = _scrape(db)
    assert {k: v for k, v in rendered.items() if k in STORED} == {k: v for k, v in stored.items() if k in STORED}
    assert rendered["canary_snapshot_up"] == [((), 1.0)]


def test_a_snapshot_a_migration_behind_still_shows_its_families(tmp_path: Path) -> None:
    """A shard's snapshot at migration 12 (no `metric_buckets.label`, no `round_ends`): the families its tables
    can give are rendered, the others left out; the scrape still parses."""
    db = tmp_path / "canary.duckdb"
    _saved(db, "m")
    _snapshot_sql(db, "DELETE FROM schema_migrations WHERE version >= 14; DROP TABLE round_ends;"
                      " CREATE TABLE b12 AS SELECT name, model, tag, le, count FROM metric_buckets;"
                      " DROP TABLE metric_buckets; ALTER TABLE b12 RENAME TO metric_buckets")
    scraped = _scrape(db)
    assert scraped["canary_probe_success"] and scraped["canary_probe_outcomes"]
    assert "canary_rounds" not in scraped and "gen_ai_client_operation_duration_seconds" not in scraped
    assert scraped["canary_snapshot_up"] == [((), 1.0)]


def test_migration_14_renders_the_text_of_a_rollup_kept_before_it_with_the_new_labels(tmp_path: Path) -> None:
    """A file at migration 12 (text with `endpoint=`, buckets without `label`, no rounds ledger) comes out of
    migration 14 with every model's text rendered again, its buckets and its ended rounds kept."""
    db = tmp_path / "canary.duckdb"
    _saved(db, "m")
    with store.open_store(db) as con:
        kept = sorted(con.execute("SELECT * FROM metric_text").fetchall())
        buckets = sorted(con.execute("SELECT name, model, tag, le, count FROM metric_buckets").fetchall())
        con.execute("UPDATE metric_text SET body = replace(body, 'provider_tag=', 'endpoint=')")
        con.execute("DROP TABLE round_ends")
        con.execute("CREATE TABLE b12 AS SELECT name, model, tag, le, count FROM metric_buckets")
        con.execute("DROP TABLE metric_buckets")
        con.execute("ALTER TABLE b12 RENAME TO metric_buckets")
        con.execute("DELETE FROM schema_migrations WHERE version >= 14")  # the file as migration 12 left it
    with store.open_store(db) as con:
        assert sorted(con.execute("SELECT * FROM metric_text").fetchall()) == kept
        assert sorted(con.execute("SELECT name, model, tag, le, count FROM metric_buckets").fetchall()) == buckets
        assert con.execute("SELECT model, status FROM round_ends").fetchall() == [("m", "complete")]
    assert kept and all("endpoint=" not in body for _, _, body in kept)


def test_a_new_round_renders_its_model_again_and_leaves_the_others(tmp_path: Path) -> None:
    db = tmp_path / "canary.duckdb"
    _saved(db, "m", "n")
    with store.open_store(db, snapshot=True) as con:
        n_before = con.execute("SELECT family, body FROM metric_text WHERE model = 'n' ORDER BY 1").fetchall()
        save_settlement(con, _settlement("m", T0 + timedelta(minutes=30)), landed_at=T0)
        n_after = con.execute("SELECT family, body FROM metric_text WHERE model = 'n' ORDER BY 1").fetchall()
    assert n_after == n_before
    outcomes = dict(_scrape(db)["canary_probe_outcomes"])
    key = (("contract", "ttft"), ("model", "m"), ("outcome", "fail"), ("provider_tag", "b"))
    assert outcomes[key] == 2


def test_one_collector_reads_each_new_snapshot_on_its_kept_instance(tmp_path: Path) -> None:
    """The exporter keeps one DuckDB instance and attaches each new snapshot file (a new inode) to it."""
    db = tmp_path / "canary.duckdb"
    _saved(db, "m")
    collector = CanaryCollector([db], CFG)
    key = (("contract", "ttft"), ("model", "m"), ("outcome", "fail"), ("provider_tag", "b"))

    def fails() -> float:
        fams = {f.name: f for f in text_string_to_metric_families(exposition(collector).decode())}
        return sum(s.value for s in fams["canary_probe_outcomes"].samples
                   if tuple(sorted(s.labels.items())) == key)

    assert fails() == 1
    with store.open_store(db, snapshot=True) as con:
        save_settlement(con, _settlement("m", T0 + timedelta(minutes=30)), landed_at=T0)
    with store.open_store(db, snapshot=True):
        pass
    assert fails() == 2
    assert collector._duck is not None and collector._duck.execute(
        "SELECT count(*) FROM duckdb_databases() WHERE database_name = 'snapshot'").fetchone() == (0,)
