"""Deliver the alerts outbox to Slack with no DuckDB lock held during any post.

    deliver_outbox(db_path, settings, now, logger)

1. A short write window claims the due alerts (``sending_since`` stamped, ``claimed_by`` this process,
   committed) and closes. An earlier claim is taken over once its 60 s lease ran out, or at once when its
   process is gone (tasks/runtime/liveness.py).
2. Alerts whose earlier post has an unknown fate (its process died mid-post, or Slack answered after our
   timeout) are looked up in the channel's recent history by the key carried in the message metadata:
   found means it was posted, so it is marked sent without posting again; not found (the history could be
   read) means it was not posted, so posting it now is no duplicate.
3. The rest are made postable (Slack's size limits) and posted, one by one, with the database closed, each at
   the channel's pace (`pace`: tasks/alerts/delivery_loop.py), a follow-up in its parent's thread
   (tasks/alerts/threads.py). A post Slack answered 5xx has an unknown fate too (Slack may have written it):
   it is looked up in the channel at once, marked sent when found, posted again later only when not.
   Then each parent that got a follow-up in its thread is rewritten to say how its suspensions ended.
4. A second short window records each result, and where each posted message is (its channel and ts). An alert
   Slack refused for good is marked ``failed``, and an alert about it (`delivery_failed`: short plain text that
   no size rule can refuse) is queued and posted at once, in this same delivery; the log says it at ERROR.
   Nothing is retried for ever.

So with the Web API and SLACK_CHANNEL given as a channel ID, each alert is posted exactly once. With a
webhook, or a channel given by name, the history cannot be read: the trail a dead delivery process left
beside the database (tasks/alerts/trail.py) says which of its posts completed (not posted again), which one
was in flight and which never started; an alert whose post may have landed is posted again and counted in
``alerts.possible_duplicates`` (at-least-once; `canary status` shows the count).
A window that cannot be had in time skips this delivery: the alerts stay queued for the next round or the
dead-man check. Nothing here raises for Slack or lock trouble; the summary says what happened.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any

from tasks.alerts.slack_client import (
    BATCH_FATAL_ERRORS,
    RATE_LIMITED,
    DeliveryResult,
    Spot,
    deliver,
    found_posts,
    posted_keys,
)
from tasks.alerts.slack_settings import SlackSettings
from tasks.alerts.threads import Threads, read_threads, record_threads, update_parents
from tasks.alerts.trail import DeadTrails, Trail, dead_trails, open_trail
from tasks.core.render.postable import FALLBACK_KIND, fallback_alert, post_key
from tasks.core.render.text import name
from tasks.core.types import Alert
from tasks.errors import StoreError
from tasks.runtime.failpoints import failpoint
from tasks.runtime.liveness import ProcessId, claim_is_dead

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
    gave_up: int = 0  # refused by Slack for good: marked failed, never retried
    fallbacks: int = 0  # `delivery_failed` alerts queued about them (posted in this same delivery)
    retry_after_s: float | None = None  # Slack asked us to wait this long
    skipped: bool = False  # the write window could not be had: everything stays queued
    errors: tuple[str, ...] = ()
    claimed: int = 0  # alerts this delivery claimed (as many as its limit: more may be due)
    rate_limited: bool = False  # Slack answered 429: the batch stopped (`retry_after_s`: for how long)
    handed_over: bool = False  # the channel's delivery loop was running: it posts these alerts (delivery_loop.py)


def deliver_outbox(
    db_path: str, settings: SlackSettings, now: datetime, logger: Any = None, *, limit: int = 50,
    lock_timeout_s: float = DELIVERY_LOCK_TIMEOUT_S, _nested: bool = False, pace: Callable[[], None] | None = None,
) -> DeliverySummary:
    """Deliver the outbox (see the module docstring); `pace` is called before each post or update."""
    log = logger or _log
    claimer = ProcessId.current().as_claim()
    try:
        claimed, threads = _claim(db_path, now, limit, claimer, lock_timeout_s)
    except StoreError as exc:
        log.warning("Alerts stay queued (the database is busy): %s", exc)
        return DeliverySummary(settings.transport, skipped=True, errors=(str(exc),))
    if not claimed and not threads.due:
        return DeliverySummary(settings.transport)

    unknown = [a for a, was_unknown in claimed if was_unknown]
    already, still_unknown, trails = _settle_unknown(db_path, settings, unknown, now, threads)
    to_post = [a for a, _ in claimed if a.key not in already]
    trail = open_trail(db_path, claimer, [a.key for a in to_post])
    results, updates = _post(to_post, settings, threads, trail, now, log, pace)
    by_key = {a.key: a for a in to_post}
    fallbacks = _fallbacks(results, by_key, now)
    outcome = _Outcome(already, still_unknown, results, updates)
    try:
        queued = _record_outcome(db_path, max(lock_timeout_s, 30.0), outcome, fallbacks, now)
        trail.close()  # recorded: the trail has said what it had to
        trails.remove()
    except StoreError as exc:  # the posts happened; their claims expire and the history check finds them
        log.warning("Delivered alerts could not be recorded yet: %s", exc)
        queued = 0
    _log_refusals(log, [r for r in results if r.permanent], by_key)
    _log_parents_not_updated(log, updates)
    summary = _summary(settings, outcome, queued, claimed=len(claimed))
    if queued and not _nested:  # the alerts about refused alerts go out now, not a round later
        more = deliver_outbox(db_path, settings, now, log, limit=limit, lock_timeout_s=lock_timeout_s,
                              _nested=True, pace=pace)
        summary = merged(summary, more)
    return summary


@dataclass(frozen=True)
class _Outcome:
    """What one delivery's posts came to, before it is recorded."""

    already: set[str]  # found posted in the channel history: marked sent, not posted again
    still_unknown: set[str]  # an earlier post's fate unknown: a repost is a possible duplicate
    results: list[DeliveryResult]
    updates: dict[str, str | None]  # parent key -> why its rewrite failed (None: rewritten)


def _claim(db_path: str, now: datetime, limit: int, claimer: str,
           lock_timeout_s: float) -> tuple[list[tuple[Alert, bool]], Threads]:
    """Step 1: the first short write window claims the due alerts and reads their threads."""
    from tasks import store

    with store.open_store(db_path, snapshot=False, lock_timeout_s=lock_timeout_s) as con:
        claimed = store.claim_alerts(con, now, limit, claimer=claimer, is_dead=claim_is_dead)
        return claimed, read_threads(con, [a for a, _ in claimed])


def _post(to_post: list[Alert], settings: SlackSettings, threads: Threads, trail: Trail, now: datetime, log: Any,
          pace: Callable[[], None] | None) -> tuple[list[DeliveryResult], dict[str, str | None]]:
    """Step 3, the database closed: post each alert (its trail written around the post), look up the ones Slack
    answered 5xx, then rewrite the parents that got a follow-up."""
    results = deliver(
        to_post, settings, now=now, logger=log, before_post=lambda a: trail.before(a.key),
        after_post=lambda r: trail.after(r.key, known=not r.unknown, sent=r.sent), threads=threads.spots, pace=pace,
    )
    results = _look_up_answered(settings, results, to_post, threads, now, log)
    failpoint("during-delivery")  # posted, not yet recorded: the next delivery must not post them again
    return results, update_parents(settings, threads, to_post, results, pace)


def _fallbacks(results: list[DeliveryResult], by_key: dict[str, Alert], now: datetime) -> list[Alert]:
    """A `delivery_failed` alert for each alert Slack refused for good (not for a fallback, nor when Slack refuses
    every message)."""
    return [fallback_alert(by_key[r.key], r.error or "refused", now) for r in results
            if r.permanent and by_key[r.key].kind != FALLBACK_KIND and not _destination_refused(r)]


def _record_outcome(db_path: str, lock_timeout_s: float, outcome: _Outcome, fallbacks: list[Alert],
                    now: datetime) -> int:
    """Step 4: the second short write window records every result and queues the fallbacks (how many)."""
    from tasks import store

    with store.open_store(db_path, snapshot=False, lock_timeout_s=lock_timeout_s) as con:
        for key in outcome.already:
            store.record_delivery(con, key, now, sent=True)
        for r in outcome.results:
            _record(store, con, r, now, was_unknown=r.key in outcome.still_unknown)
        record_threads(con, outcome.results, outcome.updates)
        return store.enqueue_alerts(con, fallbacks) if fallbacks else 0


def _log_parents_not_updated(log: Any, updates: dict[str, str | None]) -> None:
    for key, error in updates.items():
        if error is not None:
            log.warning("The message of alert %s was not updated with how it ended (%s); the next delivery "
                        "updates it", name(post_key(key), "log", 160), error)


def _summary(settings: SlackSettings, outcome: _Outcome, queued: int, *, claimed: int) -> DeliverySummary:
    results, still_unknown = outcome.results, outcome.still_unknown
    failed = [r for r in results if not r.sent and r.attempted and not r.unknown]
    return DeliverySummary(
        transport=settings.transport,
        sent=sum(r.sent for r in results) + len(outcome.already),
        failed=len(failed),
        unknown=sum(r.unknown for r in results),
        deduplicated=len(outcome.already),
        possible_duplicates=sum(1 for r in results if r.key in still_unknown and r.attempted and r.sent),
        not_attempted=sum(not r.attempted for r in results),
        retry_after_s=max((r.retry_after_s for r in results if r.retry_after_s is not None), default=None),
        errors=tuple(dict.fromkeys(r.error for r in failed if r.error)),
        gave_up=sum(r.permanent for r in results),
        fallbacks=queued,
        claimed=claimed,
        rate_limited=any(r.error is not None and r.error.startswith(RATE_LIMITED) for r in results),
    )


def _look_up_answered(settings: SlackSettings, results: list[DeliveryResult], posted: list[Alert], threads: Threads,
                      now: datetime, log: Any) -> list[DeliveryResult]:
    """Posts Slack answered 5xx (it may have written them): found in the channel (or their thread) -> sent, never
    posted again; not found where it can be read -> not posted, so a later post is no duplicate; the channel
    unreadable -> the fate stays unknown (looked up again by the next delivery)."""
    asked = {r.key for r in results if r.unknown and r.answered}
    if not asked:
        return results
    spots = {**threads.spots, **{r.key: Spot(r.channel, r.ts) for r in results if r.sent and r.channel and r.ts}}
    parents = [spots[a.thread_key].ts for a in posted if a.key in asked and a.thread_key and a.thread_key in spots]
    found = found_posts(settings, now - HISTORY_WINDOW, threads=parents)
    if found is None:
        return results
    out = []
    for r in results:
        if r.key in asked and post_key(r.key) in found:
            log.warning("Alert %s: Slack answered %s but had posted it (found in the channel): not posted again",
                        name(post_key(r.key), "log", 160), r.error)
            r = replace(r, sent=True, unknown=False, answered=False, channel=settings.channel,
                        ts=found[post_key(r.key)] or None)
        elif r.key in asked:
            r = replace(r, unknown=False, answered=False)  # not written: the next post of it is no duplicate
        out.append(r)
    return out


def _settle_unknown(
    db_path: str, settings: SlackSettings, unknown: list[Alert], now: datetime, threads: Threads | None = None,
) -> tuple[set[str], set[str], DeadTrails]:
    """Alerts of unknown fate: (posted already: mark sent, do not post; may have been posted: a repost is a
    possible duplicate; the dead claimers' trails read). Slack's history (the channel, and the threads of the
    follow-ups among them) decides where it can be read; else the trail of the dead process that claimed them;
    else each counts as a possible duplicate."""
    if not unknown:
        return set(), set(), DeadTrails()
    spots = threads.spots if threads is not None else {}
    found = posted_keys(settings, now - HISTORY_WINDOW,
                        threads=[spots[a.thread_key].ts for a in unknown if a.thread_key and a.thread_key in spots])
    if found is not None:  # readable: not found means not posted, so a repost is no duplicate
        return {a.key for a in unknown if post_key(a.key) in found}, set(), DeadTrails()
    trails = dead_trails(db_path, claim_is_dead)
    already = {a.key for a in unknown if post_key(a.key) in trails.posted}
    never_started = {a.key for a in unknown if post_key(a.key) in trails.claimed - trails.posting}
    return already, {a.key for a in unknown} - already - never_started, trails


def _destination_refused(r: DeliveryResult) -> bool:
    """Slack refuses every message (bad token, unknown channel): an alert about it could not be posted either."""
    return any(r.error and r.error.endswith(": " + code) for code in BATCH_FATAL_ERRORS)


def _log_refusals(log: Any, refused: list[DeliveryResult], by_key: dict[str, Alert]) -> None:
    """The log is the fallback path that needs nothing: one ERROR line per alert refused for good."""
    for r in refused:
        a = by_key[r.key]
        hint = (" Slack refuses every message: check SLACK_BOT_TOKEN / SLACK_CHANNEL / SLACK_WEBHOOK_URL."
                if _destination_refused(r) else " An alert about it was queued.")
        log.error("Alert refused by Slack for good and kept as failed (%s, %s on %s): %s.%s", r.error, a.kind,
                  name(a.model, "log", 80), name(post_key(a.key), "log", 160), hint)


def merged(a: DeliverySummary, b: DeliverySummary) -> DeliverySummary:
    """Two deliveries as one: counts added, flags or-ed, the longer Retry-After, every error once."""
    out: dict[str, Any] = {}
    for f in fields(DeliverySummary):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "transport":
            out[f.name] = x
        elif f.name == "retry_after_s":
            out[f.name] = max((v for v in (x, y) if v is not None), default=None)
        elif f.name == "errors":
            out[f.name] = tuple(dict.fromkeys(x + y))
        else:
            out[f.name] = (x or y) if isinstance(x, bool) else x + y
    return DeliverySummary(**out)


def _record(store: Any, con: Any, r: DeliveryResult, now: datetime, *, was_unknown: bool) -> None:
    """Sent: done (a possible duplicate if an earlier post's fate was unknown). Not sent: back to the queue,
    unless this post or an earlier one may have reached Slack: then it stays claimed for a history check."""
    if r.sent:
        store.record_delivery(con, r.key, now, sent=True, reposted_unknown=was_unknown)
    elif r.permanent:
        store.record_delivery(con, r.key, now, sent=False, error=r.error, permanent=True)
    elif r.unknown or was_unknown:
        store.record_delivery(con, r.key, now, sent=False, error=r.error, unknown=True, attempted=r.attempted)
    else:
        store.record_delivery(con, r.key, now, sent=False, error=r.error or "not attempted",
                              retry_after_s=r.retry_after_s, attempted=r.attempted)
