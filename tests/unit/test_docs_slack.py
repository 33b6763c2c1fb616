"""One Slack set-up story (issue 30: docs/operations.md asked for `chat:write` and a channel name while README.md
said exactly-once needs `channels:history` and a channel ID; following the operations doc gave at-least-once
without a word). Every place that tells an operator how to set Slack up names both scopes, and every
SLACK_CHANNEL it shows is an ID the canary can look its history up with (tasks/alerts/slack_client.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tasks.alerts.slack_settings import SlackSettings
from tasks.runtime.secrets import SecretStr

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
#: The operator's set-up instructions: the README, the operations guide and the deployment files.
SETUP_DOCS = ("README.md", "docs/operations.md")
SHOWN_CHANNEL = re.compile(r"SLACK_CHANNEL=([^\s`'\")]*)")


def _texts() -> dict[str, str]:
    files = [ROOT / p for p in SETUP_DOCS] + sorted(p for p in (ROOT / "deploy").rglob("*") if p.is_file())
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in files if p.exists()}


@pytest.mark.parametrize("doc", SETUP_DOCS)
def test_each_setup_doc_names_both_scopes_and_the_channel_id(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    assert "`chat:write`" in text and "`channels:history`" in text
    assert re.search(r"channel(?:'s)? \*\*ID\*\*", text), "say that SLACK_CHANNEL is the channel's ID"


def test_every_channel_shown_is_an_id_the_canary_can_check_history_with() -> None:
    shown = {(name, m.group(1)) for name, text in _texts().items() for m in SHOWN_CHANNEL.finditer(text)}
    assert {name for name, _ in shown} >= set(SETUP_DOCS)  # the docs do show one
    for name, value in sorted(shown):
        if not value:  # a blank to fill in (deploy/canary.env.example), no channel shown
            continue
        settings = SlackSettings(bot_token=SecretStr("xoxb-doc"), channel=value)
        assert settings.can_check_history, f"{name}: SLACK_CHANNEL={value} is no channel ID (at-least-once)"


def test_a_channel_name_cannot_check_history() -> None:
    """The check above can fail: a name gives at-least-once delivery."""
    assert not SlackSettings(bot_token=SecretStr("xoxb-doc"), channel="#canary-admins").can_check_history
    assert SlackSettings(bot_token=SecretStr("xoxb-doc"), channel="C0123ABCDEF").can_check_history
    assert not SlackSettings(webhook_url=SecretStr("https://hooks.slack.com/x"), channel="C0123").can_check_history
