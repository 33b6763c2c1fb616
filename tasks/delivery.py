"""Deliver the alerts outbox to Slack with no DuckDB lock held during any post.

    deliver_outbox(db_path, settings, now, logger)

1. A short write window claims the due alerts (``sending_since`` stamped, committed) and closes.
2. Alerts whose earlier post has an unknown fate (its process died mid-post, or Slack answered after our
   timeout) are looked up in the channel's recent history by the key carried in the message metadata:
   found means it was posted, so it is marked sent without posting again.
3. The rest are posted, one by one, with the database closed.
4. A second short window records each result.

So with the Web API and SLACK_CHANNEL given as a channel ID, each alert is posted exactly once. With a
webhook, or a channel given by name, the history cannot be read: an alert whose post had an unknown fate is
posted again and counted in ``alerts.possible_duplicates`` (at-least-once; `canary status` shows the count).
A window that cannot be had in time skips this delivery: the alerts stay queued for the next round or the
dead-man check. Nothing here raises for Slack or lock trouble; the summary says what happened.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tasks.alerts import DeliveryResult, SlackSettings, deliver, posted_keys
from tasks.errors import StoreError
from tasks.failpoints import failpoint

_log = logging.getLogger("canary.delivery")
#: How long delivery waits for the write window before leaving the alerts for the next delivery, seconds.
DELIVERY_LOCK_TIMEOUT_S = 5.0
#: How far back the channel history is searched for an unknown post.
HISTORY_WINDOW = timedelta(days=2)


@dataclass(frozen=True)
class DeliverySummary:
    transport: str
    sent: int = 0
    failed: int = 0
    unknown: int = 0  # fate unknown after this delivery: checked again next time
    deduplicated: int = 0  # found already posted in the channel history, not posted again
    possible_duplicates: int = 0  # reposted while an earlier post's fate was unknown
    not_attempted: int = 0  # left for later because the batch stopped (rate limit, outage, bad credentials)
    retry_after_s: float | None = None  # Slack asked us to wait this long
    skipped: bool = False  # the write window could not be had: everything stays queued
    errors: tuple[str, ...] = ()


def deliver_outbox(
    db_path: str, settings: SlackSettings, now: datetime, logger: Any = None, *, limit: int = 50,
    lock_timeout_s: float = DELIVERY_LOCK_TIMEOUT_S,
) -> DeliverySummary:
    """Deliver the outbox (see the module docstring)."""
    from tasks import store

    log = logger or _log
    try:
        with store.open_store(db_path, snapshot=False, lock_timeout_s=lock_timeout_s) as con:
            claimed = store.claim_alerts(con, now, limit)
    except StoreError as exc:
        log.warning("Alerts stay queued (the database is busy): %s", exc)
        return DeliverySummary(settings.transport, skipped=True, errors=(str(exc),))
    if not claimed:
        return DeliverySummary(settings.transport)

    unknown = [a for a, was_unknown in claimed if was_unknown]
    already: set[str] = set()
    if unknown:
        found = posted_keys(settings, now - HISTORY_WINDOW)
        already = {a.key for a in unknown if found is not None and a.key in found}
    to_post = [a for a, _ in claimed if a.key not in already]
    results = deliver(to_post, settings, now=now, logger=log)
    failpoint("during-delivery")  # posted, not yet recorded: the next delivery must not post them again
    still_unknown = {a.key for a in unknown if a.key not in already}

    try:
        with store.open_store(db_path, snapshot=False, lock_timeout_s=max(lock_timeout_s, 30.0)) as con:
            for key in already:
                store.record_delivery(con, key, now, sent=True)
            for r in results:
                _record(store, con, r, now, was_unknown=r.key in still_unknown)
    except StoreError as exc:  # the posts happened; their claims expire and the history check finds them
        log.warning("Delivered alerts could not be recorded yet: %s", exc)
    failed = [r for r in results if not r.sent and r.attempted and not r.unknown]
    return DeliverySummary(
        transport=settings.transport,
        sent=sum(r.sent for r in results) + len(already),
        failed=len(failed),
        unknown=sum(r.unknown for r in results),
        deduplicated=len(already),
        possible_duplicates=sum(1 for r in results if r.key in still_unknown and r.attempted and r.sent),
        not_attempted=sum(not r.attempted for r in results),
        retry_after_s=max((r.retry_after_s for r in results if r.retry_after_s is not None), default=None),
        errors=tuple(dict.fromkeys(r.error for r in failed if r.error)),
    )


def _record(store: Any, con: Any, r: DeliveryResult, now: datetime, *, was_unknown: bool) -> None:
    """Sent: done (a possible duplicate if an earlier post's fate was unknown). Not sent: back to the queue,
    unless this post or an earlier one may have reached Slack: then it stays claimed for a history check."""
    if r.sent:
        store.record_delivery(con, r.key, now, sent=True, reposted_unknown=was_unknown)
    elif r.unknown or was_unknown:
        store.record_delivery(con, r.key, now, sent=False, error=r.error, unknown=True, attempted=r.attempted)
    else:
        store.record_delivery(con, r.key, now, sent=False, error=r.error or "not attempted",
                              retry_after_s=r.retry_after_s, attempted=r.attempted)
