"""Slack delivery of the outbox (the only slack_sdk importer).

Transports, picked by `SlackSettings.from_env`:
* web       SLACK_BOT_TOKEN + SLACK_CHANNEL: WebClient chat.postMessage (SLACK_API_URL overrides the base URL)
* webhook   SLACK_WEBHOOK_URL: WebhookClient
* log       neither: each alert is a WARNING line of the logger (Slack's escapes undone) and counts as delivered

One send per alert and call, no hidden retries inside slack-sdk (retry_handlers=[]). Each alert is made
postable first (tasks/core/render/postable.py: text and blocks inside Slack's limits). A refusal is either
for now (a 429, Slack unreachable, or one of `TRANSIENT_ERRORS`: the alert stays in the outbox and the
next flush sends it again) or for good (any other answer: `DeliveryResult.permanent`, the outbox marks it
`failed` and never sends it again). A 5xx is neither: Slack may have written the message before it failed, so
its fate is unknown (`DeliveryResult.unknown`, `answered`): the caller looks it up in the channel (message
metadata) before it may post it again, never blindly. A 429 stops the batch and reports Retry-After; a network
error stops it too (the next sends would fail the same way); so does an error of the destination
(`BATCH_FATAL_ERRORS`: bad token, unknown channel); a 5xx or a refused content concerns only that alert.
Error strings are built from status codes and Slack's short error codes, then scrubbed: a token or webhook URL
never appears in them. slack-sdk's own logger is silenced (its retry log prints the webhook URL, a secret).

Threads (Web API only): an alert whose parent was posted (`threads`: parent key -> where it is) goes in the
parent's thread (`thread_ts`); `update_message` rewrites a posted message (`chat.update`). The Web API answers
each post's channel ID and `ts` (`DeliveryResult.channel`, `.ts`); a webhook answers neither, so with one
there are no threads: every alert is a top-level message.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from tasks.alerts.slack_settings import SlackSettings
from tasks.core.http_rules import is_try_again_status, parse_retry_after
from tasks.core.render.postable import post_key, postable
from tasks.core.render.text import name, unmrkdwn
from tasks.core.types import Alert

#: The longest wait a 429's Retry-After may impose on the outbox. Slack asks for seconds to minutes; a huge or
#: far-future value (garbled, or a proxy's) would hold every alert for ever, or overflow the outbox's next-try
#: time, so it is cut to an hour: the outbox asks again then, and a real limit answers 429 again.
MAX_RETRY_AFTER_S = 3600.0
#: Slack errors that no other alert of the batch can escape (bad token, unknown channel, dead webhook).
BATCH_FATAL_ERRORS = frozenset({
    "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "no_permission",
    "missing_scope", "channel_not_found", "not_in_channel", "is_archived", "channel_is_archived",
    "no_service", "no_team", "team_disabled", "action_prohibited", "invalid_token",
})
#: Slack rejected our Block Kit: resend the plain text, so a rendering bug never blocks an alert.
BLOCK_ERRORS = frozenset({"invalid_blocks", "invalid_blocks_format", "invalid_attachments", "msg_blocks_too_long"})
#: Answers that a later try may not get (Slack's side, for now). Every other refusal that Slack answers
#: (`msg_too_long`, `invalid_blocks` on the plain text too, `invalid_payload`, `channel_not_found`,
#: `invalid_auth`, a webhook's 400/403/404/410 body, ...) is for good: retrying the same alert cannot help.
TRANSIENT_ERRORS = frozenset({
    "ratelimited", "rate_limited", "internal_error", "fatal_error", "service_unavailable", "request_timeout",
    "team_added_to_org",
})

#: How the error of a post Slack answered 429 begins.
RATE_LIMITED = "slack rate limited"

_log = logging.getLogger("canary.alerts")
_sdk_log = logging.getLogger("canary.alerts.slack_sdk")
_sdk_log.addHandler(logging.NullHandler())
_sdk_log.propagate = False
_sdk_log.setLevel(logging.CRITICAL)

Logger = logging.Logger | logging.LoggerAdapter[Any]


@dataclass(frozen=True)
class DeliveryResult:
    key: str
    sent: bool
    error: str | None = None
    retry_after_s: float | None = None  # Slack asked us to wait this long before the next send
    attempted: bool = True  # False: not tried, the batch had stopped (rate limit, outage, bad credentials)
    unknown: bool = False  # the post may have reached Slack (a timeout, a 5xx): check before reposting
    permanent: bool = False  # Slack refused it for good: never retried (the outbox marks it `failed`)
    answered: bool = False  # an unknown fate Slack answered (a 5xx): its history can tell at once
    channel: str | None = None  # where the Web API put it (its channel ID) ...
    ts: str | None = None  # ... and its ts: a thread's parent for the alert's later events


@dataclass(frozen=True)
class Spot:
    """Where a posted message is: its channel ID and ts."""

    channel: str
    ts: str


@dataclass(frozen=True)
class _Sent:
    result: DeliveryResult
    stop: bool = False  # no further alert of this batch should be tried


def deliver(
    alerts: Sequence[Alert], settings: SlackSettings, *, now: datetime, logger: Logger | None = None,
    before_post: Callable[[Alert], None] | None = None, after_post: Callable[[DeliveryResult], None] | None = None,
    threads: Mapping[str, Spot] | None = None, pace: Callable[[], None] | None = None,
) -> list[DeliveryResult]:
    """Send each alert once, in order; stop the batch on 429, network errors or bad credentials.
    `before_post` / `after_post` are told of each post (tasks/alerts/trail.py keeps them on disk). An alert
    whose `thread_key` is in `threads`, or was posted earlier in this batch, goes in that thread. `pace` is
    called before each post (it waits for the channel's turn: tasks/alerts/delivery_loop.py)."""
    log = logger or _log
    alerts = [_scrubbed(settings, postable(a)) for a in alerts]  # stored redacted already; the last gate
    if settings.transport == "log":
        for a in alerts:
            log.warning("Slack not configured; alert %s (%s):\n%s", _shown(a.key), a.kind,
                        unmrkdwn(settings.scrub(a.text)))  # a log line: Slack's escapes are Slack's only
        return [DeliveryResult(a.key, sent=True) for a in alerts]
    send = _web_sender(settings, now) if settings.transport == "web" else _webhook_sender(settings, now)
    spots = dict(threads or {})
    results: list[DeliveryResult] = []
    stopped: DeliveryResult | None = None
    for a in alerts:
        if stopped is not None:
            results.append(DeliveryResult(a.key, sent=False, error=f"not attempted: {stopped.error}",
                                          retry_after_s=stopped.retry_after_s, attempted=False))
            continue
        if pace is not None:
            pace()
        if before_post is not None:
            before_post(a)
        out = send(a, spots.get(a.thread_key) if a.thread_key else None)
        if out.result.sent and out.result.channel and out.result.ts:
            spots[a.key] = Spot(out.result.channel, out.result.ts)
        if after_post is not None:
            after_post(out.result)
        results.append(out.result)
        if out.result.sent:
            log.info("Alert %s (%s) sent to Slack at %s", _shown(a.key), a.kind, now.isoformat())
        else:
            log.warning("Alert %s (%s) not delivered: %s", _shown(a.key), a.kind, out.result.error)
        if out.stop:
            stopped = out.result
    return results


def _shown(key: str) -> str:
    """An alert key as a log line shows it: escaped and bounded (a provider's tag can be 50 kB)."""
    return name(post_key(key), "log", 160)


def _scrubbed(settings: SlackSettings, alert: Alert) -> Alert:
    return replace(alert, text=settings.scrub(alert.text), blocks_json=settings.scrub(alert.blocks_json))


def _blocks(alert: Alert) -> list[dict[str, Any]] | None:
    try:
        blocks = json.loads(alert.blocks_json)
    except ValueError:
        return None
    return blocks if isinstance(blocks, list) and blocks else None


def _retry_after(headers: Mapping[str, Any] | None, now: datetime) -> float | None:
    """Slack's Retry-After, read as the probe and the router read theirs (tasks/core/http_rules.py)."""
    for k, v in (headers or {}).items():
        if k.lower() == "retry-after":
            value = v[0] if isinstance(v, list) and v else v
            wait = parse_retry_after(value if isinstance(value, str) else None, now)
            return None if wait is None else min(wait, MAX_RETRY_AFTER_S)
    return None


def _failure(settings: SlackSettings, key: str, status: int | None, code: str,
             headers: Mapping[str, Any] | None, now: datetime) -> _Sent:
    code = settings.scrub(code.strip())[:100] or "no error code"
    if status == 429:
        retry = _retry_after(headers, now)
        return _Sent(DeliveryResult(key, False, f"{RATE_LIMITED} (429): {code}", retry), stop=True)
    error = f"slack http {status}: {code}"
    if status is not None and status >= 500:  # Slack may have written it before failing: look before reposting
        return _Sent(DeliveryResult(key, False, error, unknown=True, answered=True))
    # an answer for good, unless it says "not now" (408: a proxy gave up; 429 is handled above)
    answered = status is not None and not is_try_again_status(status)
    permanent = answered and code not in TRANSIENT_ERRORS
    return _Sent(DeliveryResult(key, False, error, permanent=permanent),
                 stop=answered and code in BATCH_FATAL_ERRORS)


def _unreachable(settings: SlackSettings, key: str, err: Exception) -> _Sent:
    reason = getattr(err, "reason", None) or err
    detail = settings.scrub(f"{type(err).__name__}: {reason}")[:200]
    # Refused or unresolvable: nothing was sent. Anything else (a timeout, a reset) may have been posted.
    unknown = not isinstance(reason, ConnectionRefusedError | socket.gaierror)
    return _Sent(DeliveryResult(key, False, f"slack unreachable: {detail}", unknown=unknown), stop=True)


def _client(settings: SlackSettings) -> WebClient:
    assert settings.bot_token is not None
    return WebClient(
        token=settings.bot_token.get(), base_url=settings.api_url or WebClient.BASE_URL,
        timeout=settings.timeout_s, retry_handlers=[], logger=_sdk_log,
    )


def posted_keys(settings: SlackSettings, since: datetime, limit: int = 200,
                threads: Sequence[str] = ()) -> set[str] | None:
    """The keys of `found_posts`."""
    found = found_posts(settings, since, limit, threads)
    return None if found is None else set(found)


def found_posts(settings: SlackSettings, since: datetime, limit: int = 200,
                threads: Sequence[str] = ()) -> dict[str, str] | None:
    """Alert keys found in the channel's recent history and in the replies of the `threads` given (their
    parents' ts: conversations.history lists no reply), by message metadata, each with its message's ts; None
    when that cannot be known: webhook and log transports, a channel given by name (both methods take an ID), a
    token without the history scope, or Slack unreachable."""
    if not settings.can_check_history:
        return None
    assert settings.channel is not None
    client = _client(settings)
    keys: dict[str, str] = {}
    try:
        pages = [client.conversations_history(
            channel=settings.channel, oldest=f"{since.timestamp():.6f}", include_all_metadata=True, limit=limit)]
        pages += [client.conversations_replies(channel=settings.channel, ts=ts, include_all_metadata=True,
                                               limit=limit) for ts in dict.fromkeys(threads)]
    except Exception:  # SlackApiError, timeouts: we cannot know
        return None
    for resp in pages:
        for message in resp.get("messages") or []:
            payload = ((message or {}).get("metadata") or {}).get("event_payload") or {}
            if isinstance(payload, dict) and isinstance(payload.get("key"), str):
                keys[payload["key"]] = str(message.get("ts") or "")
    return keys


def _metadata(alert: Alert) -> dict[str, Any]:
    return {"event_type": "canary_alert", "event_payload": {"key": post_key(alert.key), "kind": alert.kind[:100]}}


def update_message(settings: SlackSettings, spot: Spot, alert: Alert) -> str | None:
    """Rewrite the posted message at `spot` as `alert` says (`chat.update`, its key kept in its metadata);
    None when Slack took it, else the error (scrubbed). Repeating an update is harmless."""
    if settings.transport != "web":
        return "no Web API: a message cannot be updated"
    alert = _scrubbed(settings, postable(alert))
    try:
        _client(settings).chat_update(channel=spot.channel, ts=spot.ts, text=alert.text, blocks=_blocks(alert),
                                      metadata=_metadata(alert))
    except SlackApiError as e:
        return settings.scrub(f"slack http {e.response.status_code}: {_api_error_code(e)}")[:200]
    except Exception as e:  # unreachable: the next delivery updates it
        return settings.scrub(f"slack unreachable: {type(e).__name__}")[:200]
    return None


def _web_sender(settings: SlackSettings, now: datetime) -> Callable[[Alert, Spot | None], _Sent]:
    assert settings.channel is not None
    client = _client(settings)
    channel = settings.channel

    def post(alert: Alert, blocks: list[dict[str, Any]] | None, thread: Spot | None) -> Any:
        return client.chat_postMessage(
            channel=thread.channel if thread else channel, text=alert.text, blocks=blocks, unfurl_links=False,
            unfurl_media=False, metadata=_metadata(alert), thread_ts=thread.ts if thread else None,
        )

    def send(alert: Alert, thread: Spot | None) -> _Sent:
        blocks = _blocks(alert)
        try:
            try:
                resp = post(alert, blocks, thread)
            except SlackApiError as e:
                if blocks is None or _api_error_code(e) not in BLOCK_ERRORS:
                    raise
                resp = post(alert, None, thread)
            ts, at = resp.get("ts"), resp.get("channel")
            return _Sent(DeliveryResult(alert.key, sent=True, channel=at if isinstance(at, str) else None,
                                        ts=ts if isinstance(ts, str) else None))
        except SlackApiError as e:
            resp = e.response
            return _failure(settings, alert.key, resp.status_code, _api_error_code(e), resp.headers, now)
        except Exception as e:  # urllib's URLError, timeouts, SlackRequestError: Slack was not reached
            return _unreachable(settings, alert.key, e)

    return send


def _api_error_code(e: SlackApiError) -> str:
    data = e.response.data
    return str(data.get("error") or "") if isinstance(data, dict) else ""


def _webhook_sender(settings: SlackSettings, now: datetime) -> Callable[[Alert, Spot | None], _Sent]:
    assert settings.webhook_url is not None
    client = WebhookClient(
        url=settings.webhook_url.get(), timeout=settings.timeout_s, retry_handlers=[], logger=_sdk_log
    )

    def send(alert: Alert, thread: Spot | None) -> _Sent:  # a webhook posts no reply: top level
        blocks = _blocks(alert)
        try:
            resp = client.send(text=alert.text, blocks=blocks, unfurl_links=False, unfurl_media=False)
            if resp.status_code == 400 and blocks is not None and resp.body.strip() in BLOCK_ERRORS:
                resp = client.send(text=alert.text, unfurl_links=False, unfurl_media=False)
        except Exception as e:  # the webhook client raises only when Slack was not reached
            return _unreachable(settings, alert.key, e)
        if resp.status_code == 200:
            return _Sent(DeliveryResult(alert.key, sent=True))
        return _failure(settings, alert.key, resp.status_code, resp.body or "", resp.headers, now)

    return send
