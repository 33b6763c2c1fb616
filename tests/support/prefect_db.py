"""Prefect servers a test starts begin from a database this Prefect version already migrated.

Migrating a fresh SQLite file and registering Prefect's block types is most of a Prefect server's start: ~8 s of
CPU before `prefect server start` answers, against ~3 s from a copy of a migrated file (~3.5 s with Prefect's
migrations left on: they find the schema at its head). The suite starts a dozen such servers (the session
harness of each pytest process, the `prefect server start` of the served e2e tests), so each begins from a copy
of the private server's template (tasks/prefect_api/db_template.py) in the test run's cache (tests/conftest.py:
one per `scripts/test` run, shared by its processes).

Prefect's own start-up settings are left alone (migrations and block registration on): a copy that is missing
or unsound only costs the time it would have saved. Every private server (`canary run` without an API) used the
template already; test_private_server_template.py and tests/e2e/test_deploy.py still start from fresh files.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path

from tasks.prefect_api import db_template


def migrated_database() -> Path | None:
    """The run's template (built once by a private server started fresh when there is none yet), or None."""
    template = db_template.template_path()
    if template is None or template.is_file():
        return template
    template.parent.mkdir(parents=True, exist_ok=True)
    with (template.parent / ".building").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other processes of the run wait for this one's template
        if not template.is_file():
            from tasks.prefect_api.private_server import PrivatePrefectServer

            server = PrivatePrefectServer()
            server.start()
            try:
                server.wait_ready(180)  # saves the template once it answers
            finally:
                server.stop()
    return template if template.is_file() else None


def seed_prefect_home(home: Path) -> Path:
    """`home` (a PREFECT_HOME) holding a copy of the migrated database where `prefect server start` reads its
    own (`prefect.db`); returns `home`."""
    home.mkdir(parents=True, exist_ok=True)
    db_template.copy_template(home / "prefect.db", migrated_database())
    return home


def seeding_mkdtemp(mkdtemp: Callable[[], str], name: str) -> Callable[[], str]:
    """`mkdtemp` whose new directory already holds a copy of the template as `name`, if there is one (not
    building it: the caller saves its own fresh database as the template instead)."""

    def seeded() -> str:
        directory = mkdtemp()
        template = db_template.template_path()
        if template is not None:
            db_template.copy_template(Path(directory) / name, template)
        return directory

    return seeded
