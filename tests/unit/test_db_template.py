"""tasks/prefect_api/db_template.py on SQLite files of its own: what makes a sound template, what replaces one.

The real thing (a private server saving the template, a second one starting from it with Prefect's migrations off)
is tests/integration/test_private_server_template.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tasks.prefect_api import db_template


def migrated_db(path: Path, *, versions: int = 1, journal: str = "wal") -> Path:
    """A database shaped like Prefect's after its start: a schema version, block types, in WAL as Prefect keeps it."""
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA journal_mode={journal}")
        db.execute("CREATE TABLE alembic_version (version_num TEXT PRIMARY KEY)")
        db.executemany("INSERT INTO alembic_version VALUES (?)", [(f"rev{i}",) for i in range(versions)])
        db.execute("CREATE TABLE block_type (slug TEXT)")
        db.execute("INSERT INTO block_type VALUES ('secret')")
    return path


def test_the_template_is_keyed_by_prefect_version_in_the_users_cache(tmp_path: Path) -> None:
    import importlib.metadata

    path = db_template.template_path({"XDG_CACHE_HOME": str(tmp_path)})
    assert path == tmp_path / "provider-canary" / f"canary-private-db-{importlib.metadata.version('prefect')}.sqlite"
    home = db_template.template_path({"HOME": str(tmp_path)})
    assert home is not None and home.parent.name == "provider-canary"


def test_a_saved_template_is_one_whole_file_that_copies_to_an_identical_database(tmp_path: Path) -> None:
    live = migrated_db(tmp_path / "live.db")
    template = tmp_path / "cache" / "canary-private-db-9.9.9.sqlite"
    assert db_template.save_template(live, template)
    assert sorted(p.name for p in template.parent.iterdir()) == [template.name]  # no -wal, -shm or partial left
    dest = tmp_path / "run" / "prefect.db"
    dest.parent.mkdir()
    assert db_template.copy_template(dest, template)
    with sqlite3.connect(dest) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [("rev0",)]
        assert db.execute("SELECT slug FROM block_type").fetchall() == [("secret",)]
    assert sorted(p.name for p in template.parent.iterdir()) == [template.name]  # reading it left nothing either


def test_saving_a_template_removes_those_of_other_prefect_versions(tmp_path: Path) -> None:
    live = migrated_db(tmp_path / "live.db")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "canary-private-db-1.0.0.sqlite").write_bytes(b"old")
    (cache / "unrelated.sqlite").write_bytes(b"not ours")
    assert db_template.save_template(live, cache / "canary-private-db-2.0.0.sqlite")
    assert sorted(p.name for p in cache.iterdir()) == ["canary-private-db-2.0.0.sqlite", "unrelated.sqlite"]


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 2000),  # a torn or overwritten file
        lambda p: p.write_bytes(b""),
        lambda p: migrated_db(p, versions=0),  # a database no migration ran on
        lambda p: sqlite3.connect(p).execute("CREATE TABLE other (x)").connection.commit(),
    ],
    ids=["garbage", "empty", "no-schema-version", "not-prefects"],
)
def test_an_unsound_template_is_removed_and_the_server_starts_fresh(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    template = tmp_path / "canary-private-db-9.9.9.sqlite"
    make(template)
    dest = tmp_path / "prefect.db"
    assert not db_template.copy_template(dest, template)
    assert not dest.exists() and not template.exists()


def test_no_template_and_an_unwritable_cache_cost_nothing_but_time(tmp_path: Path) -> None:
    dest = tmp_path / "prefect.db"
    assert not db_template.copy_template(dest, None)
    assert not db_template.copy_template(dest, tmp_path / "missing.sqlite")
    assert not dest.exists()
    live = migrated_db(tmp_path / "live.db")
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    assert not db_template.save_template(live, blocker / "canary-private-db-9.9.9.sqlite")
    assert not db_template.save_template(tmp_path / "no-such.db", tmp_path / "t.sqlite")
    assert not (tmp_path / "t.sqlite").exists() and not list(tmp_path.glob(".*partial"))
