"""The DuckDB store on a temp file: migrations, a bad or newer file, timestamps, and the held file's windows (landing,
history and state: test_store_rounds.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tasks import store
from tasks.core.types import (
    Action,
    Decision,
    Mode,
    RoundInfo,
)
from tasks.errors import StoreError
from tasks.store import migrations
from tests.support.store_rounds import ENDPOINTS, MODEL, T0, make_attempts, make_round

pytestmark = pytest.mark.integration


def test_migrations_from_empty_then_reopen_applies_nothing(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        versions = [r[0] for r in con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()]
        views = {
            r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
        }
    assert versions == [m.version for m in store.MIGRATIONS]
    assert {
        "v_attempts",
        "v_endpoint_rounds",
        "v_suspensions",
        "v_language_matrix",
        "v_ignore_history",
    } <= views
    with store.open_store(tmp_db) as con:
        assert store.migrate(con) == []
        assert con.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(store.MIGRATIONS),)


def test_an_older_file_is_upgraded_on_open(tmp_db: str) -> None:
    con = duckdb.connect(tmp_db)
    con.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)"
    )
    for m in store.MIGRATIONS[:2]:
        for statement in migrations._statements(con, m.sql):
            con.execute(statement)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [m.version, m.name])
    con.close()
    with store.open_store(tmp_db) as con:
        assert store.schema_version(con) == store.LATEST_VERSION
        assert con.execute("SELECT count(*) FROM endpoint_rounds").fetchone() == (0,)


def test_a_semicolon_inside_a_literal_or_a_comment_stays_in_its_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The runner splits a migration with DuckDB's parser: a `;` in a string, a quoted name or a comment of a
    migration is not a statement's end (splitting the text on `;` ran `INSERT ... VALUES ('a` and failed)."""
    sql = """
    CREATE TABLE notes (body VARCHAR, "odd;name" INTEGER); -- a comment; with a semicolon
    /* a block comment; it ends here */ INSERT INTO notes VALUES ('one; two', 1);
    CREATE VIEW v_notes AS SELECT body FROM notes WHERE body <> ';'
    """
    extra = migrations.Migration(migrations.LATEST_VERSION + 1, "semicolons", sql)
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, extra))
    monkeypatch.setattr(migrations, "LATEST_VERSION", extra.version)
    con = duckdb.connect()
    try:
        assert migrations.migrate(con)[-1] == extra.version
        assert con.execute('SELECT body, "odd;name" FROM notes').fetchall() == [("one; two", 1)]
        assert con.execute("SELECT body FROM v_notes").fetchall() == [("one; two",)]
    finally:
        con.close()


def test_a_migration_that_does_not_parse_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = migrations.Migration(migrations.LATEST_VERSION + 1, "broken", "CREATE TABL oops")
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, extra))
    monkeypatch.setattr(migrations, "LATEST_VERSION", extra.version)
    con = duckdb.connect()
    try:
        with pytest.raises(StoreError) as err:
            migrations.migrate(con)
        assert str(err.value).startswith(f"store: migration {extra.version} (broken) failed: Parser Error")
        assert "\n" not in str(err.value)
        assert migrations.schema_version(con) == extra.version - 1  # the earlier ones stay applied
    finally:
        con.close()


def test_a_newer_file_is_refused_with_one_line(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        con.execute("INSERT INTO schema_migrations VALUES (999, 'future', now())")
    with pytest.raises(StoreError) as err, store.open_store(tmp_db):
        pass
    assert "999" in str(err.value) and "\n" not in str(err.value)


def test_timestamps_are_declared_and_come_back_utc(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        types = dict(
            con.execute(
                "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns"
                " WHERE column_name LIKE '%\\_at' ESCAPE '\\' OR column_name LIKE '%\\_ts' ESCAPE '\\'"
            ).fetchall()
        )
        local = datetime(2026, 11, 1, 12, 0, tzinfo=UTC).astimezone(
            __import__("zoneinfo").ZoneInfo("Asia/Tokyo")
        )
        store.land_round(con, RoundInfo("rz", MODEL, local, Mode.OBSERVE), [])
        back = con.execute("SELECT round_ts FROM rounds").fetchone()
    assert types and set(types.values()) == {"TIMESTAMP WITH TIME ZONE"}
    assert back is not None and back[0] == local and back[0].utcoffset() == timedelta(0)


def test_bad_file_is_one_line_store_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.duckdb"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as err, store.open_store(junk, lock_timeout_s=0.2):
        pass
    assert "\n" not in str(err.value) and "junk.duckdb" in str(err.value)


def test_a_half_read_result_does_not_block_later_writes(tmp_db: str) -> None:
    info = make_round(1)
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, make_attempts(info), endpoints=ENDPOINTS)
        con.execute("SELECT * FROM attempts").fetchone()  # a caller leaves a streaming result half-read
        decision = Decision(T0, MODEL, "novita", Action.WOULD_SUSPEND, Mode.OBSERVE)
        assert store.append_decisions(con, [decision]) == 1


def test_windows_on_a_held_file_are_utc_and_single_threaded_whatever_the_local_zone(
    tmp_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`store.held_open` (a history's fresh file): its windows are cursors that skip the per-window TimeZone and
    migration check, so the held connection must set both for the whole database."""
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        info = make_round(1)
        with store.held_open(tmp_db):
            with store.open_store(tmp_db) as con:
                settings = con.execute(
                    "SELECT current_setting('TimeZone'), current_setting('threads')").fetchone()
                store.land_round(con, info, make_attempts(info), endpoints=ENDPOINTS)
            with store.open_store(tmp_db, read_only=True) as con:
                (started,) = con.execute("SELECT started_at FROM attempts LIMIT 1").fetchone() or (None,)
        with duckdb.connect(tmp_db) as con:
            (version,) = con.execute("SELECT max(version) FROM schema_migrations").fetchone() or (None,)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert settings == ("UTC", 1)
    assert started is not None and started.utcoffset() == timedelta(0) and started == info.round_ts
    assert version == store.migrations.LATEST_VERSION
