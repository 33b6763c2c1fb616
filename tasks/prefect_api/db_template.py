"""The private Prefect server's database, migrated once per Prefect version and copied at each start.

A private server (tasks/prefect_api/private_server.py) gets a fresh SQLite file every time. Migrating it to
Prefect's schema and registering Prefect's block types is most of the server's start-up: ready after 9.8-12.2 s
from a fresh file on a quiet 2-core machine, 3.1-3.9 s from a copy of one already migrated, with the migrations
and the block registration off (the rest is importing Prefect's server). So:

* the first server that starts fresh is copied, once it answers, to the **template**
  ``$XDG_CACHE_HOME/provider-canary/canary-private-db-<prefect version>.sqlite`` (~/.cache when XDG_CACHE_HOME
  is not set; 1.3 MB, safe to delete): SQLite's backup API reads a consistent copy of the live file into a
  temporary file beside the template, which then replaces it atomically (two commands saving at once: the last
  one wins, both are whole). Templates of other Prefect versions in the same directory are removed then;
* a later server starts from a copy of the template, with Prefect's migrations and block registration off
  (`START_FROM_TEMPLATE`): the same Prefect version wrote it, so its schema is Prefect's head and its block
  types are Prefect's own (a Prefect collection installed since brings block types the private server does not
  register: the canary uses none there; delete the file to have it saved again);
* the template holds only what Prefect writes before it answers (its schema version and block types and
  schemas, 145 rows): no run, slot, Variable or log of anyone;
* a template that does not open, fails SQLite's quick check or has no schema version is removed and the server
  starts fresh (and saves a new one); any error saving one is ignored: the template only saves time.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import sqlite3
from pathlib import Path

#: The template's directory in the user's cache directory ($XDG_CACHE_HOME, else ~/.cache).
CACHE_DIR = "provider-canary"
#: The template's name; `{version}` is Prefect's.
TEMPLATE_NAME = "canary-private-db-{version}.sqlite"
#: A server started from the template: its schema is Prefect's head and its block types are registered.
START_FROM_TEMPLATE = {
    "PREFECT_SERVER_DATABASE_MIGRATE_ON_START": "false",
    "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false",
}


def template_path(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path | None:
    """Where this Prefect version's template lives (None when Prefect's version cannot be read)."""
    try:
        version = importlib.metadata.version("prefect")
    except importlib.metadata.PackageNotFoundError:
        return None
    cache = Path(environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
    return cache / CACHE_DIR / TEMPLATE_NAME.format(version=version.replace("/", "_"))


def copy_template(dest: Path, template: Path | None) -> bool:
    """Copy a sound template to `dest` (a new file); False, and nothing at `dest`, when there is none.

    A template that is not a sound migrated database is removed (the next server saves a new one)."""
    if template is None or not template.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{template.as_uri()}?mode=ro", uri=True)) as src:
            if src.execute("PRAGMA quick_check").fetchone() != ("ok",):
                raise sqlite3.DatabaseError("quick_check failed")
            if src.execute("SELECT count(*) FROM alembic_version").fetchone() != (1,):
                raise sqlite3.DatabaseError("no schema version")
            with contextlib.closing(sqlite3.connect(dest)) as out:
                src.backup(out)
        return True
    except (sqlite3.Error, OSError):
        dest.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            template.unlink()
        return False


def save_template(live: Path, template: Path | None) -> bool:
    """Copy the live database of a server that started fresh and answers to `template`; True if saved."""
    if template is None:
        return False
    partial = template.with_name(f".{template.name}.{os.getpid()}.partial")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(f"{live.as_uri()}?mode=ro", uri=True)) as src:
            with contextlib.closing(sqlite3.connect(partial)) as out:
                src.backup(out)
                out.execute("PRAGMA journal_mode=DELETE")  # one file, read without -wal/-shm (Prefect sets WAL)
        os.replace(partial, template)
    except (sqlite3.Error, OSError):
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        return False
    prefix, _, suffix = TEMPLATE_NAME.partition("{version}")
    for other in template.parent.glob(f"{prefix}*{suffix}"):
        if other != template:
            with contextlib.suppress(OSError):
                other.unlink()
    return True
