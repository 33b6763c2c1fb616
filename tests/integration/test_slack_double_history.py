"""The Slack double's conversations.history honours `oldest`, `latest`, `inclusive` and `limit` like the Web API
(real slack-sdk WebClient over 127.0.0.1), so the canary's history lookup (tasks.alerts.slack_client.posted_keys) is
tested against the window it really asks for."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tasks.alerts.slack_client import posted_keys
from tasks.alerts.slack_settings import SlackSettings
from tests.support.slack_history import ts_us
from tests.support.slack_server import CHANNEL_ID, SlackServer

pytestmark = pytest.mark.integration

TOKEN = "xoxb-history-window-token"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class SteppedClock:
    """The double's clock: each message is posted one hour after the previous one, starting at T0."""

    def __init__(self) -> None:
        self.at = T0 - timedelta(hours=1)

    def __call__(self) -> float:
        self.at += timedelta(hours=1)
        return self.at.timestamp()


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    with SlackServer(token=TOKEN, clock=SteppedClock()) as server:
        yield server


@pytest.fixture
def client(slack: SlackServer) -> WebClient:
    return WebClient(token=TOKEN, base_url=slack.api_url, retry_handlers=[])


def post(client: WebClient, n: int) -> list[str]:
    """Post `n` messages keyed k0.. (one hour apart); their ts, oldest first."""
    return [
        client.chat_postMessage(
            channel=CHANNEL_ID, text=f"m{i}",
            metadata={"event_type": "canary_alert", "event_payload": {"key": f"k{i}"}},
        )["ts"]
        for i in range(n)
    ]


def texts(client: WebClient, **window: object) -> list[str]:
    return [m["text"] for m in client.conversations_history(channel=CHANNEL_ID, **window)["messages"]]


def test_posted_messages_carry_slack_shaped_increasing_ts(client: WebClient) -> None:
    ts = post(client, 3)
    assert ts[0] == f"{int(T0.timestamp())}.000000"
    assert all(len(t.partition(".")[2]) == 6 for t in ts)
    assert [ts_us(t) for t in ts] == sorted(ts_us(t) for t in ts) and len(set(ts)) == 3
    history = client.conversations_history(channel=CHANNEL_ID)["messages"]
    assert [m["ts"] for m in history] == ts[::-1]  # newest first, the ts chat.postMessage answered


def test_oldest_and_latest_are_exclusive_unless_inclusive(client: WebClient) -> None:
    ts = post(client, 4)
    assert texts(client) == ["m3", "m2", "m1", "m0"]
    assert texts(client, oldest=ts[1]) == ["m3", "m2"]
    assert texts(client, oldest=ts[1], inclusive=True) == ["m3", "m2", "m1"]
    assert texts(client, latest=ts[2]) == ["m1", "m0"]
    assert texts(client, latest=ts[2], inclusive=True) == ["m2", "m1", "m0"]
    assert texts(client, oldest=ts[0], latest=ts[3]) == ["m2", "m1"]
    assert texts(client, oldest=f"{T0.timestamp() + 1800:.6f}") == ["m3", "m2", "m1"]  # between two posts
    assert texts(client, oldest=ts[3]) == []


def test_limit_keeps_the_newest_and_says_there_is_more(client: WebClient) -> None:
    post(client, 5)
    page = client.conversations_history(channel=CHANNEL_ID, limit=2)
    assert [m["text"] for m in page["messages"]] == ["m4", "m3"] and page["has_more"] is True
    whole = client.conversations_history(channel=CHANNEL_ID, limit=5)
    assert len(whole["messages"]) == 5 and whole["has_more"] is False


def test_a_malformed_bound_is_refused(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as err:
        client.conversations_history(channel=CHANNEL_ID, oldest="yesterday")
    assert err.value.response["error"] == "invalid_arguments"


def test_the_canarys_lookup_sees_only_messages_after_its_since(slack: SlackServer, client: WebClient) -> None:
    """posted_keys asks for `oldest=since`: keys posted before it are not there (as in a real channel)."""
    post(client, 4)  # T0, T0+1h, T0+2h, T0+3h
    settings = SlackSettings.from_env({"SLACK_BOT_TOKEN": TOKEN, "SLACK_CHANNEL": CHANNEL_ID,
                                       "SLACK_API_URL": slack.api_url})
    assert posted_keys(settings, T0 - timedelta(minutes=1)) == {"k0", "k1", "k2", "k3"}
    assert posted_keys(settings, T0 + timedelta(minutes=90)) == {"k2", "k3"}
    assert posted_keys(settings, T0 + timedelta(hours=3)) == set()  # exclusive: the one at exactly T0+3h is out
    assert posted_keys(settings, T0 - timedelta(minutes=1), limit=1) == {"k3"}  # a page holds the newest
