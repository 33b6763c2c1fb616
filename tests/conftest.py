"""Shared fixtures: one Prefect harness per session, a loopback simulator, temp databases.

Nothing here reaches outside 127.0.0.1. Under pytest-xdist every worker is its own session: its own harness
(a temporary SQLite database and a free port), and its own PREFECT_HOME (profiles, local result storage),
so workers share no Prefect state with each other or with the developer's ~/.prefect.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

# Ctrl-C reaches the processes the tests start: a pytest started as a script's `&` job (scripts/test's parallel
# run) inherits SIGINT ignored from bash, and so would every `canary serve` a test stops with SIGINT (it ran on,
# and the test failed after 90 s). A handler, unlike "ignored", does not survive exec: children get the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Prefect offline: no telemetry, a generous start-up budget for the temporary server (docs/design.md).
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# Never let a developer's real key or Slack settings leak into a test run.
for _var in ("OPENROUTER_API_KEY", "SLACK_BOT_TOKEN", "SLACK_CHANNEL", "SLACK_WEBHOOK_URL", "SLACK_API_URL"):
    os.environ.pop(_var, None)
# Never let a developer's Prefect profile (an API URL, a database) reach a test; one home per xdist worker.
# Set before anything imports Prefect, which reads its settings once; subprocesses inherit it.
_PREFECT_HOME = tempfile.mkdtemp(prefix=f"canary-tests-prefect-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
atexit.register(shutil.rmtree, _PREFECT_HOME, ignore_errors=True)
os.environ["PREFECT_HOME"] = _PREFECT_HOME
# The user's cache stays the user's: the Prefect database template (tasks/prefect_api/db_template.py) lives in one
# cache directory per test run (scripts/test makes one for both of its pytest runs; else the first process makes
# it and its xdist workers inherit it), built once, and every later Prefect server of the run starts from a copy
# (tests/support/prefect_db.py).
if not os.environ.get("CANARY_TEST_CACHE"):
    os.environ["CANARY_TEST_CACHE"] = tempfile.mkdtemp(prefix="canary-tests-cache-")
    atexit.register(shutil.rmtree, os.environ["CANARY_TEST_CACHE"], ignore_errors=True)
os.environ["XDG_CACHE_HOME"] = os.environ["CANARY_TEST_CACHE"]
for _var in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH"):
    os.environ.pop(_var, None)


@pytest.fixture(scope="session", autouse=True)
def redaction_hooks() -> None:
    """The test session is an entry point like `canary` or a flow: the redaction hooks are installed first
    (importing the project installs nothing: tests/unit/test_import_graph.py)."""
    from tasks.runtime.secrets import install_redaction

    install_redaction()


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for the whole session, shared by every e2e test. Its database starts as a copy
    of the run's migrated one (tests/support/prefect_db.py: ~3 s of CPU to answer instead of ~8); when the run
    has none yet, the harness's own, just migrated, becomes it."""
    from prefect.testing import utilities

    from tasks.prefect_api import db_template
    from tests.support.prefect_db import seeding_mkdtemp

    made: list[Path] = []

    def mkdtemp() -> str:
        made.append(Path(tempfile.mkdtemp()))
        return str(made[-1])

    with ExitStack() as stack:
        with pytest.MonkeyPatch.context() as patch:  # the harness's database file is `prefect-test.db` in a mkdtemp()
            patch.setattr(utilities, "mkdtemp", seeding_mkdtemp(mkdtemp, HARNESS_DB))
            stack.enter_context(utilities.prefect_test_harness(server_startup_timeout=90))
        template = db_template.template_path()
        if template is not None and not template.is_file() and made and (made[0] / HARNESS_DB).is_file():
            db_template.save_template(made[0] / HARNESS_DB, template)
        yield


#: The file name of prefect_test_harness's SQLite database (prefect/testing/utilities.py).
HARNESS_DB = "prefect-test.db"


@pytest.fixture
def tmp_db(tmp_path: Any) -> str:
    return str(tmp_path / "canary.duckdb")


#: Test files whose tests share state built once per process (a module- or session-scoped fixture that builds
#: rounds or a history under tmp_path_factory): under pytest-xdist (scripts/test) each group runs on one worker,
#: which builds that state once; every other test is dealt out on its own. Files sharing a group share a worker
#: (test_at.py reuses the history test_notebooks.py built). pytest_collection_modifyitems keeps this list honest.
SHARED_STATE_GROUPS = {
    "tests/e2e/test_confirmation.py": "confirmation",
    "tests/e2e/test_cost_status.py": "cost_status",
    "tests/e2e/test_fleet_prometheus.py": "fleet_prometheus",
    "tests/e2e/test_history.py": "history",
    "tests/e2e/test_operator_stack.py": "operator_stack",
    "tests/e2e/test_prefect_postgres.py": "prefect_postgres",
    "tests/e2e/test_live_suspicion.py": "suspicion",
    "tests/e2e/test_round.py": "round",
    "tests/e2e/test_round_tools.py": "round_tools",
    "tests/e2e/test_round_upstream_words.py": "round_upstream_words",
    "tests/e2e/test_served_quality.py": "served_quality",
    "tests/e2e/test_served_watcher.py": "served_watcher",
    "tests/e2e/test_toy_contract.py": "toy_contract",
    "tests/integration/test_at.py": "shared_history",
    "tests/integration/test_live_prometheus.py": "live_prometheus",
    "tests/integration/test_notebooks.py": "shared_history",
    "tests/integration/test_wheel.py": "wheel",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` by SHARED_STATE_GROUPS. (pytest-xdist's own `xdist_group` marker renames the test ids,
    which pytest 9 no longer lets it do: marked tests were spread over every worker.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedStateScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_STATE_GROUPS.get(path, nodeid)

    return SharedStateScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test using a module- or session-scoped fixture that builds state on disk must be in a shared-state
    group, or every xdist worker that runs one of its tests builds that state again."""
    missing = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        for name in info.names_closure:
            defs = info.name2fixturedefs.get(name)
            if defs and defs[-1].scope in ("module", "session") and "tmp_path_factory" in defs[-1].argnames:
                path = item.nodeid.split("::", 1)[0]
                if path not in SHARED_STATE_GROUPS:
                    missing.add(f"{path} (fixture {name})")
    if missing:
        raise pytest.UsageError(
            "tests/conftest.py: add to SHARED_STATE_GROUPS (they build shared state): " + ", ".join(sorted(missing))
        )
    if os.environ.get("PYTEST_XDIST_WORKER") and config.getvalue("dist") == "loadgroup":
        items[:] = spread_heavy(items)


def _scope(item: pytest.Item) -> str:
    path = item.nodeid.split("::", 1)[0]
    return SHARED_STATE_GROUPS.get(path, item.nodeid)


def spread_heavy(items: list[pytest.Item]) -> list[pytest.Item]:
    """The collection with the e2e files (Prefect flow rounds: each keeps a core busy) spread evenly among the
    lighter tests, each e2e file's tests (and each shared-state group's) kept together. In collection order
    all three workers started on e2e groups at once, and healthy endpoints failed TTFT while the CPU was that
    oversubscribed."""
    scopes: dict[str, list[pytest.Item]] = {}
    for item in items:  # an e2e file stays together (its module fixtures are set up once), the rest by scope
        path = item.nodeid.split("::", 1)[0]
        scopes.setdefault(path if path.startswith("tests/e2e/") else _scope(item), []).append(item)
    heavy = [v for v in scopes.values() if v[0].nodeid.startswith("tests/e2e/")]
    light = [v for v in scopes.values() if not v[0].nodeid.startswith("tests/e2e/")]
    if not heavy or not light:
        return items
    out: list[pytest.Item] = []
    every = len(light) / len(heavy)  # light scopes between two heavy ones
    placed = 0
    for i, group in enumerate(light):
        while placed < len(heavy) and placed * every <= i:
            out.extend(heavy[placed])
            placed += 1
        out.extend(group)
    for group in heavy[placed:]:
        out.extend(group)
    return out
