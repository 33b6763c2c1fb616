"""Without Slack, an alert is a WARNING line of the log with its text as a person reads it: Slack's escapes
(`&gt;`, `&lt;`, `&amp;`, which its mrkdwn needs) stay in what goes to Slack only (issue 44). The alert is one
the canary renders (a live suspicion's), delivered through the real `deliver` and, for Slack, the real slack-sdk
webhook client against the local Slack-compatible server."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.alerts.slack_client import deliver
from tasks.alerts.slack_settings import SlackSettings
from tasks.core.render.text import mrkdwn, unmrkdwn
from tasks.core.types import Alert
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
#: What a live-suspicion alert says, as rendered for Slack (tasks/core/render/: evidence through `mrkdwn`).
SAID = "live transport failures 9/20 (45%) >= 25% & the peers' 3% < 25%: <a> probe comes next"


def alert() -> Alert:
    return Alert(key=f"m|x|suspected|{NOW.isoformat()}", created_at=NOW, kind="suspected", model="m", tag="x",
                 text="Suspicion m x: " + mrkdwn(SAID), blocks_json="[]")


def test_the_log_shows_the_text_unescaped_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    deliver([alert()], SlackSettings.from_env({}), now=NOW, logger=logging.getLogger("test.alerts"))
    [record] = [r for r in caplog.records if r.name == "test.alerts"]
    assert record.levelno == logging.WARNING
    assert record.getMessage().endswith("Suspicion m x: " + SAID) and "&gt;" not in record.getMessage()


def test_slack_still_gets_its_escapes() -> None:
    with SlackServer(token="xoxb-unused") as slack:
        [result] = deliver([alert()], SlackSettings.from_env({"SLACK_WEBHOOK_URL": slack.webhook_url}), now=NOW)
        posted = [(m.body or {}).get("text", "") for m in slack.messages]
    assert result.sent and posted == ["Suspicion m x: " + mrkdwn(SAID)]
    assert "&gt;= 25% &amp; the peers' 3% &lt; 25%" in posted[0]


@given(st.text())
def test_unmrkdwn_undoes_mrkdwn(text: str) -> None:
    assert unmrkdwn(mrkdwn(text)) == text
