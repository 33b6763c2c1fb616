"""Shared fixtures: one Prefect harness per session, a loopback simulator, temp databases.

Nothing here reaches outside 127.0.0.1. Under pytest-xdist every worker is its own session: its own harness
(a temporary SQLite database and a free port), and its own PREFECT_HOME (profiles, local result storage),
so workers share no Prefect state with each other or with the developer's ~/.prefect.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

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
for _var in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH"):
    os.environ.pop(_var, None)


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for the whole session (~8 s to start), shared by every e2e test."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture
def tmp_db(tmp_path: Any) -> str:
    return str(tmp_path / "canary.duckdb")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (--dist loadgroup, scripts/test)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests sharing a module-scoped fixture that builds state on disk (rounds, a history: it asks for
    tmp_path_factory) form one xdist group, so one worker builds it once instead of every worker again.
    A test that names its group itself (a state shared across modules) keeps it."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        module = getattr(item, "module", None)
        if info is None or module is None or item.get_closest_marker("xdist_group") is not None:
            continue
        for name in info.names_closure:
            defs = info.name2fixturedefs.get(name)
            if defs and defs[-1].scope == "module" and "tmp_path_factory" in defs[-1].argnames:
                item.add_marker(pytest.mark.xdist_group(module.__name__))
                break
