"""deliver_outbox(): DuckDB outbox + real slack-sdk + the local Slack server. Nothing lost, nothing doubled."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tasks import store
from tasks.alerts.delivery import deliver_outbox
from tasks.alerts.slack_client import MAX_RETRY_AFTER_S
from tasks.alerts.slack_settings import SlackSettings
from tasks.core.types import Alert
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.integration

TOKEN = "xoxb-9999-outbox-secret-token"
NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
LOG = logging.getLogger("test.outbox")


def make_alerts(n: int, at: datetime = NOW) -> list[Alert]:
    blocks = json.dumps([{"type": "section", "text": {"type": "mrkdwn", "text": "x"}}])
    return [
        Alert(key=f"m|tag{i}|suspend|enforce|{at.isoformat()}", created_at=at + timedelta(seconds=i),
              kind="suspend", model="m", tag=f"tag{i}", text=f"Suspended tag{i}", blocks_json=blocks)
        for i in range(n)
    ]


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    """Slack's clock is the test's (messages posted at NOW), so the history window (`oldest`) is deterministic."""
    with SlackServer(token=TOKEN, clock=NOW.timestamp) as server:
        yield server


@pytest.fixture
def settings(slack: SlackServer) -> SlackSettings:
    return SlackSettings.from_env({"SLACK_BOT_TOKEN": TOKEN, "SLACK_CHANNEL": "#canary",
                                   "SLACK_API_URL": slack.api_url})


def flush(db: str, settings: SlackSettings, now: datetime = NOW):  # type: ignore[no-untyped-def]
    return deliver_outbox(db, settings, now, LOG)


def enqueue(db: str, alerts: list[Alert]) -> int:
    with store.open_store(db, snapshot=False) as con:
        return store.enqueue_alerts(con, alerts)


def rows(db: str) -> dict[str, dict]:
    with store.open_store(db, snapshot=False) as con:
        return {r["key"]: r for r in store.alert_rows(con).to_dict("records")}


def sent_keys(slack: SlackServer) -> Counter[str | None]:
    return Counter(m.alert_key for m in slack.messages)


def by_id(slack: SlackServer) -> SlackSettings:
    """The channel given by its ID: a post of unknown fate (a timeout, a 5xx) can be looked up."""
    return SlackSettings.from_env({"SLACK_BOT_TOKEN": TOKEN, "SLACK_CHANNEL": "C0CANARY",
                                   "SLACK_API_URL": slack.api_url})


def test_one_failed_delivery_loses_nothing_and_duplicates_nothing(tmp_db: str, slack: SlackServer) -> None:
    """A 500 that wrote nothing: looked up at once (not in the channel), so posting it later is no duplicate."""
    settings = by_id(slack)
    alerts = make_alerts(3)
    assert enqueue(tmp_db, alerts) == 3
    slack.fail_next(1, status=500)
    first = flush(tmp_db, settings)
    assert (first.sent, first.failed, first.errors) == (2, 1, ("slack http 500: internal_error",))
    state = rows(tmp_db)
    assert state[alerts[0].key]["status"] == "pending" and state[alerts[0].key]["attempts"] == 1
    assert "500" in state[alerts[0].key]["last_error"]
    second = flush(tmp_db, settings, NOW + timedelta(minutes=30))
    assert (second.sent, second.failed) == (1, 0)
    assert flush(tmp_db, settings, NOW + timedelta(hours=1)).sent == 0
    assert sent_keys(slack) == Counter(a.key for a in alerts)  # each key exactly once
    posts = [r for r in slack.requests if r.path == "/api/chat.postMessage"]
    assert len(posts) == 4  # 3 + the one retry
    assert all(r["possible_duplicates"] == 0 for r in rows(tmp_db).values())


def test_a_5xx_with_a_channel_name_is_posted_again_and_counted(
    tmp_db: str, slack: SlackServer, settings: SlackSettings
) -> None:
    """A channel given by name cannot be looked up: the 5xx's alert waits out its claim, is posted again and counted
    as a possible duplicate (at-least-once, said by `canary status`), never taken as certainly not posted."""
    alerts = make_alerts(1)
    enqueue(tmp_db, alerts)
    slack.write_then_fail_next(1, status=500)
    first = flush(tmp_db, settings)
    assert (first.sent, first.unknown, first.failed) == (0, 1, 0)
    again = flush(tmp_db, settings, NOW + timedelta(minutes=30))
    assert (again.sent, again.possible_duplicates) == (1, 1)
    assert sent_keys(slack)[alerts[0].key] == 2 and rows(tmp_db)[alerts[0].key]["possible_duplicates"] == 1


def test_requeued_keys_are_never_sent_again(tmp_db: str, slack: SlackServer, settings: SlackSettings) -> None:
    alerts = make_alerts(2)
    enqueue(tmp_db, alerts)
    assert flush(tmp_db, settings).sent == 2
    assert enqueue(tmp_db, alerts) == 0  # the next round renders the same transitions again
    assert flush(tmp_db, settings, NOW + timedelta(minutes=30)).sent == 0
    assert sent_keys(slack) == Counter(a.key for a in alerts)


def test_rate_limit_is_honoured_across_flushes(
    tmp_db: str, slack: SlackServer, settings: SlackSettings
) -> None:
    alerts = make_alerts(3)
    enqueue(tmp_db, alerts)
    slack.rate_limit_next(1, retry_after=30)
    limited = flush(tmp_db, settings)
    assert (limited.sent, limited.failed, limited.not_attempted, limited.retry_after_s) == (0, 1, 2, 30.0)
    assert len(slack.requests) == 1
    assert flush(tmp_db, settings, NOW + timedelta(seconds=10)).sent == 0  # still inside Retry-After
    assert len(slack.requests) == 1
    later = flush(tmp_db, settings, NOW + timedelta(seconds=31))
    assert later.sent == 3
    assert sent_keys(slack) == Counter(a.key for a in alerts)
    assert all(r["status"] == "sent" for r in rows(tmp_db).values())


def test_a_retry_after_date_is_honoured_across_flushes(
    tmp_db: str, slack: SlackServer, settings: SlackSettings
) -> None:
    """Slack's Retry-After may be an HTTP-date (RFC 9110); it was read as no wait at all."""
    alerts = make_alerts(2)
    enqueue(tmp_db, alerts)
    slack.rate_limit_next(1, retry_after=format_datetime(NOW + timedelta(seconds=45), usegmt=True))
    assert flush(tmp_db, settings).retry_after_s == 45.0
    assert flush(tmp_db, settings, NOW + timedelta(seconds=30)).sent == 0  # still before the date
    assert len(slack.requests) == 1
    assert flush(tmp_db, settings, NOW + timedelta(seconds=46)).sent == 2
    assert sent_keys(slack) == Counter(a.key for a in alerts)


@pytest.mark.parametrize("garbled", ["inf", "-5", "soon"])
def test_a_garbled_retry_after_is_no_wait_and_loses_nothing(
    tmp_db: str, slack: SlackServer, settings: SlackSettings, garbled: str
) -> None:
    """`inf` was read as an infinite wait, which the outbox could not turn into a time (OverflowError)."""
    alerts = make_alerts(2)
    enqueue(tmp_db, alerts)
    slack.rate_limit_next(1, retry_after=garbled)
    limited = flush(tmp_db, settings)
    assert (limited.sent, limited.retry_after_s) == (0, None)
    assert flush(tmp_db, settings, NOW + timedelta(seconds=1)).sent == 2
    assert sent_keys(slack) == Counter(a.key for a in alerts)


@pytest.mark.parametrize("huge", ["99999999999999", "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_a_huge_retry_after_waits_an_hour_and_loses_nothing(
    tmp_db: str, slack: SlackServer, settings: SlackSettings, huge: str
) -> None:
    """A Retry-After past `timedelta`'s range overflowed the outbox's next-try time (OverflowError: the batch's
    delivery failed); a far-future date held every alert for ever. Both wait MAX_RETRY_AFTER_S."""
    alerts = make_alerts(2)
    enqueue(tmp_db, alerts)
    slack.rate_limit_next(1, retry_after=huge)
    limited = flush(tmp_db, settings)
    assert (limited.sent, limited.retry_after_s) == (0, MAX_RETRY_AFTER_S)
    assert flush(tmp_db, settings, NOW + timedelta(seconds=MAX_RETRY_AFTER_S - 1)).sent == 0
    assert flush(tmp_db, settings, NOW + timedelta(seconds=MAX_RETRY_AFTER_S + 1)).sent == 2
    assert sent_keys(slack) == Counter(a.key for a in alerts)


def test_outage_keeps_everything_pending_until_slack_is_back(
    tmp_db: str, slack: SlackServer, settings: SlackSettings
) -> None:
    alerts = make_alerts(3)
    enqueue(tmp_db, alerts)
    slack.down()
    down = flush(tmp_db, settings)
    assert (down.sent, down.failed, down.not_attempted) == (0, 1, 2)
    assert all(r["status"] == "pending" for r in rows(tmp_db).values())
    slack.up()
    assert flush(tmp_db, settings, NOW + timedelta(minutes=30)).sent == 3
    assert sent_keys(slack) == Counter(a.key for a in alerts)


def test_token_never_reaches_the_table_or_the_log(
    tmp_db: str, slack: SlackServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    enqueue(tmp_db, make_alerts(2))
    slack.fail_next(1, status=500, body=json.dumps({"ok": False, "error": f"bad {TOKEN}"}))
    summary = flush(tmp_db, by_id(slack))
    assert summary.failed == 1 and all(TOKEN not in e for e in summary.errors)
    assert all(TOKEN not in str(r["last_error"]) for r in rows(tmp_db).values())
    assert TOKEN not in caplog.text and "not delivered" in caplog.text


def test_without_slack_the_outbox_drains_to_the_log(tmp_db: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    alerts = make_alerts(2)
    enqueue(tmp_db, alerts)
    summary = flush(tmp_db, SlackSettings.from_env({}))
    assert (summary.transport, summary.sent) == ("log", 2)
    assert all(r["status"] == "sent" for r in rows(tmp_db).values())
    assert all(a.key in caplog.text for a in alerts)


def test_no_database_lock_is_held_while_posting(tmp_db: str, slack: SlackServer, settings: SlackSettings) -> None:
    """While Slack is slow, another process can open the database: delivery holds no lock during posts."""
    import subprocess
    import sys
    import threading

    enqueue(tmp_db, make_alerts(1))
    slack.delay_next(1, seconds=3)
    done = threading.Event()
    t = threading.Thread(target=lambda: (flush(tmp_db, settings), done.set()))
    t.start()
    deadline = datetime.now(UTC) + timedelta(seconds=2.5)
    while not slack.requests and datetime.now(UTC) < deadline:
        threading.Event().wait(0.05)
    assert slack.requests and not done.is_set(), "the post should be in flight"
    probe = subprocess.run([sys.executable, "-c", f"import duckdb; duckdb.connect({tmp_db!r}).close()"],
                           capture_output=True, text=True, timeout=30)
    t.join(30)
    assert probe.returncode == 0, probe.stderr


def test_a_post_of_unknown_fate_is_looked_up_not_reposted(tmp_db: str, slack: SlackServer) -> None:
    """Slack answers after our timeout: the message exists, we cannot know. The next delivery finds its key in
    the channel history (message metadata) and marks it sent without posting it again: exactly once."""
    from dataclasses import replace

    settings = replace(SlackSettings.from_env({"SLACK_BOT_TOKEN": TOKEN, "SLACK_CHANNEL": "C0CANARY",
                                               "SLACK_API_URL": slack.api_url}), timeout_s=1)
    alerts = make_alerts(2)
    enqueue(tmp_db, alerts)
    slack.delay_next(1, seconds=2.5)
    first = flush(tmp_db, settings)
    assert (first.sent, first.unknown) == (0, 1)  # the batch stops at the unknown one
    state = rows(tmp_db)
    assert state[alerts[0].key]["sending_since"] is not None and state[alerts[0].key]["status"] == "pending"
    second = flush(tmp_db, settings, NOW + timedelta(minutes=30))
    assert (second.deduplicated, second.sent, second.possible_duplicates) == (1, 2, 0)
    assert sent_keys(slack) == Counter(a.key for a in alerts)  # each exactly once
    assert all(r["status"] == "sent" and r["possible_duplicates"] == 0 for r in rows(tmp_db).values())


def test_a_webhook_post_of_unknown_fate_is_reposted_and_counted(tmp_db: str, slack: SlackServer) -> None:
    """A webhook cannot read the channel history: at-least-once, with the possible duplicate counted."""
    from dataclasses import replace

    settings = replace(SlackSettings.from_env({"SLACK_WEBHOOK_URL": slack.webhook_url}), timeout_s=1)
    alerts = make_alerts(1)
    enqueue(tmp_db, alerts)
    slack.delay_next(1, seconds=2.5)
    assert flush(tmp_db, settings).unknown == 1
    again = flush(tmp_db, settings, NOW + timedelta(minutes=30))
    assert (again.sent, again.possible_duplicates) == (1, 1)
    assert rows(tmp_db)[alerts[0].key]["possible_duplicates"] == 1
