"""deliver() through the real slack-sdk clients against a local Slack-compatible server (127.0.0.1)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from tasks.alerts.slack_client import deliver
from tasks.alerts.slack_settings import SlackSettings
from tasks.core.types import Alert
from tasks.errors import ConfigError
from tests.support.slack_server import WEBHOOK_PATH, SlackServer

pytestmark = pytest.mark.integration

TOKEN = "xoxb-4242-canary-secret-token"
NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "*Suspended* `x`"}}]


def make_alerts(n: int = 3) -> list[Alert]:
    return [
        Alert(key=f"m|tag{i}|suspend|enforce|{NOW.isoformat()}", created_at=NOW, kind="suspend", model="m",
              tag=f"tag{i}", text=f"Suspended tag{i}", blocks_json=json.dumps(BLOCKS))
        for i in range(n)
    ]


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    with SlackServer(token=TOKEN) as server:
        yield server


def web(slack: SlackServer, token: str = TOKEN) -> SlackSettings:
    return SlackSettings.from_env(
        {"SLACK_BOT_TOKEN": token, "SLACK_CHANNEL": "#canary", "SLACK_API_URL": slack.api_url.rstrip("/")}
    )


def webhook(slack: SlackServer) -> SlackSettings:
    return SlackSettings.from_env({"SLACK_WEBHOOK_URL": slack.webhook_url})


def test_web_api_posts_each_alert_once_with_blocks_and_key(slack: SlackServer) -> None:
    alerts = make_alerts()
    results = deliver(alerts, web(slack), now=NOW)
    assert [(r.key, r.sent, r.error) for r in results] == [(a.key, True, None) for a in alerts]
    msgs = slack.messages
    assert len(slack.requests) == len(msgs) == 3
    assert [m.alert_key for m in msgs] == [a.key for a in alerts]
    for m, a in zip(msgs, alerts, strict=True):
        assert m.path == "/api/chat.postMessage"
        assert m.headers["authorization"] == f"Bearer {TOKEN}"
        assert m.body is not None
        assert (m.body["channel"], m.body["text"], m.body["blocks"]) == ("#canary", a.text, BLOCKS)
        assert m.body["unfurl_links"] is False


def test_webhook_posts_each_alert_once(slack: SlackServer) -> None:
    alerts = make_alerts()
    results = deliver(alerts, webhook(slack), now=NOW)
    assert all(r.sent for r in results)
    msgs = slack.messages
    assert [m.path for m in msgs] == [WEBHOOK_PATH] * 3
    assert [m.body["text"] for m in msgs if m.body] == [a.text for a in alerts]
    assert all("authorization" not in m.headers for m in msgs)


@pytest.mark.parametrize("mode", ["web", "webhook"])
def test_a_server_error_is_an_unknown_fate_of_that_alert_only(slack: SlackServer, mode: str) -> None:
    """Slack may have written the message before its 5xx: never "certainly not posted" (the outbox looks it up
    before posting it again, tasks/alerts/delivery.py); the batch goes on."""
    settings = web(slack) if mode == "web" else webhook(slack)
    slack.fail_next(1, status=500)
    results = deliver(make_alerts(), settings, now=NOW)
    assert [(r.sent, r.unknown, r.answered) for r in results] == [(False, True, True), (True, False, False),
                                                                   (True, False, False)]
    assert results[0].error == "slack http 500: internal_error" and not results[0].permanent
    assert results[0].attempted and results[0].retry_after_s is None
    assert len(slack.requests) == 3 and len(slack.messages) == 2


@pytest.mark.parametrize("mode", ["web", "webhook"])
def test_rate_limit_stops_the_batch_and_reports_retry_after(slack: SlackServer, mode: str) -> None:
    settings = web(slack) if mode == "web" else webhook(slack)
    slack.rate_limit_next(1, retry_after=7)
    results = deliver(make_alerts(), settings, now=NOW)
    assert [(r.sent, r.attempted, r.retry_after_s) for r in results] == [
        (False, True, 7.0), (False, False, 7.0), (False, False, 7.0)]
    assert results[0].error == "slack rate limited (429): ratelimited"
    assert len(slack.requests) == 1  # nothing more was sent after the 429


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
@pytest.mark.parametrize("mode", ["web", "webhook"])
def test_connection_refused_fails_fast_and_stops_the_batch(slack: SlackServer, mode: str) -> None:
    settings = web(slack) if mode == "web" else webhook(slack)
    slack.down()
    started = time.monotonic()
    results = deliver(make_alerts(), settings, now=NOW)
    elapsed = time.monotonic() - started
    assert elapsed < 2.0
    assert [(r.sent, r.attempted) for r in results] == [(False, True), (False, False), (False, False)]
    assert results[0].error is not None and results[0].error.startswith("slack unreachable: URLError")
    slack.up()
    assert all(r.sent for r in deliver(make_alerts(), settings, now=NOW))
    assert len(slack.messages) == 3


def test_503_outage_is_a_failure(slack: SlackServer) -> None:
    slack.down("503")
    results = deliver(make_alerts(1), web(slack), now=NOW)
    assert not results[0].sent and results[0].error is not None and "503" in results[0].error
    slack.up()
    assert deliver(make_alerts(1), web(slack), now=NOW)[0].sent


@pytest.mark.parametrize("mode", ["web", "webhook"])
def test_refused_blocks_fall_back_to_plain_text(slack: SlackServer, mode: str) -> None:
    settings = web(slack) if mode == "web" else webhook(slack)
    slack.error_next(1, "invalid_blocks")
    [result] = deliver(make_alerts(1), settings, now=NOW)
    assert result.sent
    first, second = slack.requests
    assert not first.ok and first.body and first.body["blocks"] == BLOCKS
    assert second.ok and second.body and "blocks" not in second.body
    assert second.body["text"] == "Suspended tag0"


def test_bad_token_stops_the_batch_without_showing_the_token(slack: SlackServer) -> None:
    results = deliver(make_alerts(), web(slack, token="xoxb-wrong-0000-secret"), now=NOW)
    assert results[0].error == "slack http 200: invalid_auth"
    assert [r.attempted for r in results] == [True, False, False]
    assert all("xoxb-wrong" not in (r.error or "") for r in results)
    assert slack.messages == []


def test_token_and_webhook_url_never_reach_errors_or_logs(
    slack: SlackServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_path = WEBHOOK_PATH.rsplit("/", 1)[1]
    slack.fail_next(1, status=502, body=f"upstream said: Bearer {TOKEN} at {slack.webhook_url}")
    slack.fail_next(1, status=500, body=json.dumps({"ok": False, "error": f"token {TOKEN} rejected"}))
    slack.rate_limit_next(1, retry_after=1)
    errors = [r.error for r in deliver(make_alerts(3), webhook(slack), now=NOW)]
    errors += [r.error for r in deliver(make_alerts(1), web(slack), now=NOW)]
    slack.down()
    errors += [r.error for r in deliver(make_alerts(1), web(slack), now=NOW)]
    errors += [r.error for r in deliver(make_alerts(1), webhook(slack), now=NOW)]
    slack.up()
    assert len([e for e in errors if e]) >= 5
    assert errors[0] is not None and "502" in errors[0]
    for text in [*(e or "" for e in errors), caplog.text]:
        assert TOKEN not in text
        assert secret_path not in text
    assert "not delivered" in caplog.text  # the failures were logged, just not the secrets


def test_without_slack_alerts_go_to_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    settings = SlackSettings.from_env({})
    assert settings.transport == "log"
    alerts = make_alerts(2)
    results = deliver(alerts, settings, now=NOW, logger=logging.getLogger("test.alerts"))
    assert all(r.sent for r in results)
    logged = [r.getMessage() for r in caplog.records if r.name == "test.alerts"]
    assert len(logged) == 2 and "Suspended tag1" in logged[1] and alerts[1].key in logged[1]


def test_settings_from_env() -> None:
    s = SlackSettings.from_env({"SLACK_BOT_TOKEN": TOKEN, "SLACK_CHANNEL": "#c",
                                "SLACK_API_URL": "http://127.0.0.1:9/api", "SLACK_WEBHOOK_URL": "http://x/y"})
    assert s.transport == "web" and s.api_url == "http://127.0.0.1:9/api/"
    assert TOKEN not in repr(s) and "'***'" in repr(s)
    assert SlackSettings.from_env({"SLACK_WEBHOOK_URL": "https://hooks.example/T/B/X"}).transport == "webhook"
    assert SlackSettings.from_env({"SLACK_BOT_TOKEN": "", "SLACK_CHANNEL": ""}).transport == "log"
    with pytest.raises(ConfigError, match="SLACK_CHANNEL"):
        SlackSettings.from_env({"SLACK_BOT_TOKEN": TOKEN})
    with pytest.raises(ConfigError, match="SLACK_API_URL") as bad_api:
        SlackSettings.from_env({"SLACK_BOT_TOKEN": TOKEN, "SLACK_CHANNEL": "#c", "SLACK_API_URL": "ftp:x"})
    assert "\n" not in str(bad_api.value)
    with pytest.raises(ConfigError, match="SLACK_WEBHOOK_URL") as bad_hook:
        SlackSettings.from_env({"SLACK_WEBHOOK_URL": "not a url T123/B456/secretpart"})
    assert "secretpart" not in str(bad_hook.value)
