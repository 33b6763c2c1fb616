"""Alerts Slack cannot take as they are: made postable, or marked failed and announced; never retried for ever.

DuckDB outbox + real slack-sdk + the local Slack server, which applies Slack's size rules (`msg_too_long`
past 40,000 characters of text, `invalid_blocks` for a section over 3,000 or a header over 150 characters).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from provider_canary.cli.admin_read import failed_alerts_line
from tasks import store
from tasks.alerts.delivery import deliver_outbox
from tasks.alerts.slack_settings import SlackSettings
from tasks.core.render import render_decision_alert
from tasks.core.types import Action, Alert, Decision, Mode
from tasks.runtime.failpoints import ENV
from tests.support.outbox_rows import enqueue, rows
from tests.support.slack_server import CHANNEL_ID, SlackServer

pytestmark = pytest.mark.integration

TOKEN = "xoxb-7777-refused-secret-token"
NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
LOG = logging.getLogger("test.refused")
REPO = Path(__file__).resolve().parents[2]
HUGE_TAG = "evil`tag\n" + "x" * 50_000


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    with SlackServer(token=TOKEN, clock=NOW.timestamp) as server:
        yield server


def web(slack: SlackServer, channel: str = "#canary") -> SlackSettings:
    return SlackSettings.from_env({"SLACK_BOT_TOKEN": TOKEN, "SLACK_CHANNEL": channel,
                                   "SLACK_API_URL": slack.api_url})


def alert(i: int = 0, text: str = "Suspended tag", blocks: list[dict[str, object]] | None = None) -> Alert:
    blocks = blocks if blocks is not None else [{"type": "section", "text": {"type": "mrkdwn", "text": "x"}}]
    return Alert(key=f"m|tag{i}|suspend|enforce|{NOW.isoformat()}", created_at=NOW + timedelta(seconds=i),
                 kind="suspend", model="acme/m", tag=f"tag{i}", text=text, blocks_json=json.dumps(blocks))


def health(db: str) -> dict:
    with store.open_store(db, read_only=True) as con:
        return store.alert_health(con)


def test_a_50k_character_alert_is_posted_within_slacks_limits_and_kept_whole(tmp_db: str, slack: SlackServer) -> None:
    """52,872 characters of text and a 50 kB section: Slack says msg_too_long to it as it is (on main it stayed
    pending for ever); made postable it goes out at once, and the outbox keeps every character."""
    big = alert(text="Suspended: " + "y" * 52_861, blocks=[
        {"type": "header", "text": {"type": "plain_text", "text": "h" * 400}},
        *({"type": "section", "text": {"type": "mrkdwn", "text": "s" * 50_000}} for _ in range(60)),
    ])
    enqueue(tmp_db, [big])
    summary = deliver_outbox(tmp_db, web(slack), NOW, LOG)
    assert (summary.sent, summary.gave_up) == (1, 0), summary
    [msg] = slack.messages
    body = msg.body or {}
    assert len(body["text"]) <= 4000 and "the whole alert is in the alerts table" in body["text"]
    blocks = json.loads(body["blocks"]) if isinstance(body["blocks"], str) else body["blocks"]
    assert len(blocks) <= 50 and len(blocks[0]["text"]["text"]) <= 150
    assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section")
    kept = rows(tmp_db)[big.key]
    assert kept["status"] == "sent" and len(kept["text"]) == len(big.text)


def test_a_hostile_50k_tag_decision_alert_goes_out_with_a_whole_command(tmp_db: str, slack: SlackServer) -> None:
    d = Decision(at=NOW, model="acme/m", tag=HUGE_TAG, action=Action.SUSPEND, mode=Mode.ENFORCE, ladder_step=1,
                 until=NOW + timedelta(days=1), reason="failed 2 rounds in a row")
    enqueue(tmp_db, [render_decision_alert(d)])
    assert deliver_outbox(tmp_db, web(slack), NOW, LOG).sent == 1
    [msg] = slack.messages
    text = (msg.body or {})["text"]
    assert len(text) <= 4000 and "`canary lift &lt;tag&gt; --model acme/m --reason \"...\"`" in text
    assert len(msg.alert_key or "") <= 200


def test_a_refused_alert_is_marked_failed_announced_at_once_and_never_retried(
    tmp_db: str, slack: SlackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A stricter Slack refuses even the capped text (msg_too_long): the alert is `failed`, an alert about it
    (short plain text) is posted in the same delivery, the log says it at ERROR, `canary status` counts it."""
    caplog.set_level(logging.INFO)
    slack.max_text_chars = 1000
    big, ok = alert(0, text="z" * 3000), alert(1)
    enqueue(tmp_db, [big, ok])
    summary = deliver_outbox(tmp_db, web(slack), NOW, LOG)
    assert (summary.gave_up, summary.fallbacks, summary.sent) == (1, 1, 2), summary
    state = rows(tmp_db)
    assert state[big.key]["status"] == "failed" and "msg_too_long" in state[big.key]["last_error"]
    [fallback] = [r for r in state.values() if r["kind"] == "delivery_failed"]
    assert fallback["status"] == "sent" and fallback["blocks_json"] == "[]"
    posted = [m.body or {} for m in slack.messages]
    notice = next(p for p in posted if "could not be posted" in p["text"])
    assert "msg_too_long" in notice["text"] and "blocks" not in notice and len(notice["text"]) < 1000
    assert any(r.levelno == logging.ERROR and "msg_too_long" in r.getMessage() for r in caplog.records)
    line = failed_alerts_line(health(tmp_db))
    assert "\n" not in line and ": 1;" in line and "msg_too_long" in line
    before = len(slack.requests)
    for minutes in (30, 60, 90):
        again = deliver_outbox(tmp_db, web(slack), NOW + timedelta(minutes=minutes), LOG)
        assert again.sent == again.gave_up == 0
    assert len(slack.requests) == before  # never retried


def test_invalid_blocks_then_invalid_text_is_failed_not_stuck(tmp_db: str, slack: SlackServer) -> None:
    a = alert()
    enqueue(tmp_db, [a])
    slack.error_next(2, "invalid_blocks")  # the blocks, then the plain-text resend
    summary = deliver_outbox(tmp_db, web(slack), NOW, LOG)
    assert (summary.gave_up, summary.fallbacks) == (1, 1)
    assert rows(tmp_db)[a.key]["status"] == "failed"
    assert any("could not be posted" in (m.body or {}).get("text", "") for m in slack.messages)


def test_a_webhook_400_is_for_good(tmp_db: str, slack: SlackServer) -> None:
    settings = SlackSettings.from_env({"SLACK_WEBHOOK_URL": slack.webhook_url})
    a = alert()
    enqueue(tmp_db, [a])
    slack.fail_next(1, status=400, body="invalid_payload")
    summary = deliver_outbox(tmp_db, settings, NOW, LOG)
    assert summary.gave_up == 1 and rows(tmp_db)[a.key]["status"] == "failed"
    assert summary.sent == 1  # the fallback notice


def test_a_destination_that_refuses_everything_fails_the_alert_and_says_so_in_the_log(
    tmp_db: str, slack: SlackServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    a = alert()
    enqueue(tmp_db, [a])
    slack.error_next(1, "channel_not_found")
    summary = deliver_outbox(tmp_db, web(slack), NOW, LOG)
    assert (summary.gave_up, summary.fallbacks) == (1, 0)  # a notice could not get through either
    assert rows(tmp_db)[a.key]["status"] == "failed"
    assert any(r.levelno == logging.ERROR and "SLACK_CHANNEL" in r.getMessage() for r in caplog.records)


def test_a_transient_refusal_stays_pending(tmp_db: str, slack: SlackServer) -> None:
    a = alert()
    enqueue(tmp_db, [a])
    slack.fail_next(1, status=503)
    assert deliver_outbox(tmp_db, web(slack), NOW, LOG).gave_up == 0
    assert rows(tmp_db)[a.key]["status"] == "pending"
    assert deliver_outbox(tmp_db, web(slack), NOW + timedelta(minutes=30), LOG).sent == 1


def test_a_50k_alert_key_is_logged_bounded_on_a_delivery_failure(
    tmp_db: str, slack: SlackServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    a = Alert(key="m|" + HUGE_TAG + "|suspend", created_at=NOW, kind="suspend", model="acme/m", tag=HUGE_TAG,
              text="t", blocks_json="[]")
    enqueue(tmp_db, [a])
    slack.fail_next(1, status=500)
    deliver_outbox(tmp_db, web(slack), NOW, LOG)
    messages = [r.getMessage() for r in caplog.records]
    assert any("not delivered" in m for m in messages)
    assert all(len(m) < 1000 and "\n" not in m for m in messages if "not delivered" in m)


def test_a_post_in_flight_whose_history_shows_nothing_is_no_duplicate(tmp_db: str, slack: SlackServer) -> None:
    """Eight alerts claimed by a process that died while posting the first: the history (readable: a channel
    ID) shows none of them, so reposting them duplicates nothing. On main this counted 8."""
    alerts = [alert(i) for i in range(8)]
    enqueue(tmp_db, alerts)
    with store.open_store(tmp_db, snapshot=False) as con:
        assert len(store.claim_alerts(con, NOW)) == 8  # the dead process's claim
    summary = deliver_outbox(tmp_db, web(slack, CHANNEL_ID), NOW + timedelta(minutes=2), LOG)
    assert (summary.sent, summary.possible_duplicates, summary.deduplicated) == (8, 0, 0)
    assert sum(int(r["possible_duplicates"] or 0) for r in rows(tmp_db).values()) == 0
    assert Counter(m.alert_key for m in slack.messages) == Counter(a.key for a in alerts)


def test_a_dead_claimers_alerts_go_out_at_once_not_after_the_lease(tmp_db: str, slack: SlackServer) -> None:
    """A delivery process is killed after posting, before recording (failpoint during-delivery). Ten seconds
    later, well inside the 60 s claim lease, the next delivery sees that the claimer is gone and settles its
    alerts at once (found in the channel history: not posted again). On main they waited out the lease."""
    alerts = [alert(i) for i in range(2)]
    enqueue(tmp_db, alerts)
    script = (
        "import sys; from datetime import datetime; from tasks.alerts.slack_settings import SlackSettings;"
        "from tasks.alerts.delivery import deliver_outbox;"
        f"s = SlackSettings.from_env({{'SLACK_BOT_TOKEN': {TOKEN!r}, 'SLACK_CHANNEL': {CHANNEL_ID!r},"
        f" 'SLACK_API_URL': {slack.api_url!r}}});"
        f"deliver_outbox({tmp_db!r}, s, datetime.fromisoformat({NOW.isoformat()!r}))"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env={**os.environ, ENV: "during-delivery"},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    assert all(r["status"] == "pending" for r in rows(tmp_db).values())
    summary = deliver_outbox(tmp_db, web(slack, CHANNEL_ID), NOW + timedelta(seconds=10), LOG)
    assert (summary.deduplicated, summary.sent) == (2, 2), summary
    assert all(r["status"] == "sent" for r in rows(tmp_db).values())
    assert Counter(m.alert_key for m in slack.messages) == Counter(a.key for a in alerts)  # each once


def test_a_webhook_delivery_killed_mid_post_reposts_only_what_was_in_flight(tmp_db: str, slack: SlackServer) -> None:
    """A webhook cannot read the channel history. A delivery process posts alert 0, is killed while alert 1 is
    in flight, never reaches alert 2. Its trail beside the database tells the next delivery: alert 0 is not
    posted again, alert 1 is (one possible duplicate), alert 2 is posted once. On main: all three reposted
    and counted."""
    alerts = [alert(i) for i in range(3)]
    enqueue(tmp_db, alerts)
    slack.delay_next(1, seconds=20, after=1)
    script = (
        "from datetime import datetime; from tasks.alerts.slack_settings import SlackSettings;"
        "from tasks.alerts.delivery import deliver_outbox;"
        f"s = SlackSettings.from_env({{'SLACK_WEBHOOK_URL': {slack.webhook_url!r}}});"
        f"deliver_outbox({tmp_db!r}, s, datetime.fromisoformat({NOW.isoformat()!r}))"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        deadline = datetime.now(UTC) + timedelta(seconds=60)
        while len(slack.requests) < 2 and datetime.now(UTC) < deadline and proc.poll() is None:
            threading.Event().wait(0.05)
        assert len(slack.requests) == 2, "alert 1 must be in flight"
    finally:
        proc.kill()
        proc.wait(30)
    settings = SlackSettings.from_env({"SLACK_WEBHOOK_URL": slack.webhook_url})
    summary = deliver_outbox(tmp_db, settings, NOW + timedelta(minutes=2), LOG)
    assert (summary.sent, summary.deduplicated, summary.possible_duplicates) == (3, 1, 1), summary
    texts = Counter((r.body or {}).get("text") for r in slack.messages)
    assert texts == Counter({"Suspended tag": 4})  # 0 once, 1 twice (in flight, then again), 2 once
    assert [rows(tmp_db)[a.key]["possible_duplicates"] for a in alerts] == [0, 1, 0]
    assert not list(Path(tmp_db + ".spool").glob("delivery-*.json"))  # the trails are consumed
