"""The dead-man of the whole canary as a Prefect Proactive automation: Prefect's server tells Slack when no run of
the cycle deployment completed for two round intervals, with nothing of the canary running (no worker, no
`canary serve`: the server's triggers and actions services evaluate and act).

    canary serve (at every start)  ─┐
    canary deadman-automation      ─┼─> apply_deadman_automation(deployment, interval, slack)
    prefect deploy (a build step)  ─┘      ├─ Webhook block `canary-deadman-slack` (overwritten): the Slack request,
                                           │  its token or webhook URL kept as the block's secrets
                                           └─ automation `<deployment>-silent` (found by name: updated, else created)
                                                trigger  Proactive: fewer than 1 `prefect.flow-run.Completed` of a
                                                         run of <deployment> within 2 intervals (tasks/core/silence.py)
                                                action   call-webhook with the block and a fixed Slack message
                                                         (no Slack settings: do-nothing, Prefect's own
                                                         `prefect.automation.triggered` event is all there is)

Why `call-webhook` and not Prefect's `send-notification` with its SlackWebhook block: that block posts through
Apprise, whose Slack plugin only knows hooks.slack.com (no bot token, no other host); a Webhook block sends any
request, so both of the canary's Slack settings work (chat.postMessage with SLACK_BOT_TOKEN + SLACK_CHANNEL at
SLACK_API_URL, or SLACK_WEBHOOK_URL), and so does a local Slack double. A `run-deployment` action would need the
very worker or `canary serve` whose absence it reports.

The per-model dead-man (flows/deadman.py, the `deadman` alert through the outbox) stays: it sees one model whose
rounds fail while the cycle completes, which no cycle-level event shows. This one sees the process, the schedule
or the server's dispatching stop, which the per-model check, running in that process, cannot.

The automation fires once per window while the silence lasts (Prefect starts a new window after firing). Slack's
answer is in the `prefect.automation.action.executed` event (its `response_body`; a refused post is visible
there, and the action itself failing is `prefect.automation.action.failed`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from tasks.alerts.slack_settings import SlackSettings
from tasks.core.silence import automation_name, duration_words, silence_text, silence_window

#: The Webhook block the automation's action calls; `canary serve` overwrites it with the current Slack settings.
WEBHOOK_BLOCK = "canary-deadman-slack"
#: Slack's Web API when SLACK_API_URL is not set (as slack_sdk's WebClient).
SLACK_API_URL = "https://slack.com/api/"


@dataclass(frozen=True)
class AppliedAutomation:
    """What `apply_deadman_automation` made: for the one line a command prints (never a secret)."""

    name: str
    automation_id: UUID
    window: timedelta
    action: str  # "Slack chat.postMessage to <channel>", "the Slack webhook", or "no action (no Slack settings)"
    created: bool  # False: an automation of that name was updated


def silence_trigger(deployment: str, window: timedelta) -> Any:
    """Proactive: fewer than one Completed flow run of `deployment` within `window` fires it."""
    from prefect.events.schemas.automations import EventTrigger, Posture

    return EventTrigger(
        posture=Posture.Proactive,
        expect={"prefect.flow-run.Completed"},
        match={"prefect.resource.id": "prefect.flow-run.*"},
        match_related={"prefect.resource.role": "deployment", "prefect.resource.name": deployment},
        threshold=1,
        within=window,
    )


def slack_request(settings: SlackSettings, text: str) -> tuple[str, dict[str, str], str] | None:
    """(url, headers, body) of the post the action makes, or None without Slack settings. Secrets inside."""
    if settings.transport == "web":
        assert settings.bot_token is not None
        url = (settings.api_url or SLACK_API_URL) + "chat.postMessage"
        headers = {"Authorization": f"Bearer {settings.bot_token.get()}"}
        body = {"channel": settings.channel, "text": text, "unfurl_links": False}
    elif settings.transport == "webhook":
        assert settings.webhook_url is not None
        url, headers, body = settings.webhook_url.get(), {}, {"text": text}
    else:
        return None
    return url, {**headers, "Content-Type": "application/json; charset=utf-8"}, json.dumps(body)


def _action_words(settings: SlackSettings) -> str:
    if settings.transport == "web":
        return f"Slack chat.postMessage to {settings.channel}"
    return "the Slack webhook" if settings.transport == "webhook" else "no action (no Slack settings)"


def _save_webhook(url: str, headers: dict[str, str]) -> UUID:
    from prefect.blocks.webhook import Webhook
    from prefect.types import SecretDict
    from pydantic import SecretStr

    block = Webhook(method="POST", url=SecretStr(url), headers=SecretDict(headers), allow_private_urls=True)
    return UUID(str(block.save(WEBHOOK_BLOCK, overwrite=True)))


def apply_deadman_automation(deployment: str, interval: timedelta, settings: SlackSettings) -> AppliedAutomation:
    """Create the automation for `deployment`, or update the one of that name (idempotent: one per deployment,
    its window restarted). Needs the Prefect API of the current settings (PREFECT_API_URL)."""
    from prefect.client.orchestration import get_client
    from prefect.events.actions import CallWebhook, DoNothing
    from prefect.events.schemas.automations import AutomationCore

    window = silence_window(interval)
    name = automation_name(deployment)
    request = slack_request(settings, silence_text(deployment, window))
    actions: list[Any] = [DoNothing()]
    if request is not None:
        url, headers, body = request
        actions = [CallWebhook(block_document_id=_save_webhook(url, headers), payload=body)]
    automation = AutomationCore(
        name=name,
        description=(f"The canary is silent: no run of {deployment} completed within {duration_words(window)} "
                     "(two round intervals). Made by provider-canary (canary serve, canary deadman-automation)."),
        enabled=True,
        tags=["canary"],
        trigger=silence_trigger(deployment, window),
        actions=actions,
    )
    with get_client(sync_client=True) as client:
        existing = client.read_automations_by_name(name)
        for extra in existing[1:]:  # one per name: duplicates someone made by hand would each fire
            client.delete_automation(extra.id)
        if existing:
            client.update_automation(existing[0].id, automation)
            return AppliedAutomation(name, existing[0].id, window, _action_words(settings), created=False)
        created = client.create_automation(automation)
    return AppliedAutomation(name, created, window, _action_words(settings), created=True)


def describe(applied: AppliedAutomation) -> str:
    """One line for the operator."""
    how = "created" if applied.created else "updated"
    return (f"dead-man automation {applied.name} {how}: no completed run within {duration_words(applied.window)}"
            f" -> {applied.action}")
