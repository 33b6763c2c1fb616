"""e2e fixtures: the Slack double wired into the environment, a throwaway PostgreSQL cluster, and every test starts
without the operational Variable another test may have left behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import PostgresCluster, postgres_cluster, require_bindir
from tests.support.slack_server import SlackServer

SLACK_TOKEN = "xoxb-e2e-test-token"


@pytest.fixture
def slack_channel() -> str:
    """The SLACK_CHANNEL the `slack` fixture sets; a module overrides this fixture to use another one."""
    return "#canary-admins"


@pytest.fixture
def slack(monkeypatch: pytest.MonkeyPatch, slack_channel: str) -> Iterator[SlackServer]:
    """The local Slack double (tests/support/slack_server.py), with SLACK_BOT_TOKEN, SLACK_CHANNEL and
    SLACK_API_URL pointing the canary (and subprocesses inheriting the environment) at it."""
    with SlackServer(token=SLACK_TOKEN) as server:
        monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
        monkeypatch.setenv("SLACK_CHANNEL", slack_channel)
        monkeypatch.setenv("SLACK_API_URL", server.api_url)
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL cluster per session (tests/support/postgres.py), on its unix socket only (named for
    port 5432, as on a Debian host or in deploy/compose.yaml); each test makes its own database in it."""
    bindir = require_bindir()  # skip (fail on CI) before anything starts
    with postgres_cluster(bindir, tcp=False) as cluster:
        yield cluster


@pytest.fixture(autouse=True)
def no_leftover_operational_variable(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "prefect_harness" not in request.fixturenames:
        return
    from prefect.variables import Variable

    from tasks.ignore_list.variable_sync import VARIABLE_NAME

    try:
        Variable.unset(VARIABLE_NAME)
    except Exception:
        pass
