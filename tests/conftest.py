"""Shared fixtures: one Prefect harness per session, a loopback simulator, temp databases.

Nothing here reaches outside 127.0.0.1.
"""

from __future__ import annotations

import os
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


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for the whole session (~8 s to start), shared by every e2e test."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture
def tmp_db(tmp_path: Any) -> str:
    return str(tmp_path / "canary.duckdb")
