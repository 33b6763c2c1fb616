"""Threads at delivery (shell): where each follow-up goes, and each parent's update once a follow-up went out.

    threads = read_threads(con, claimed)                           # in the claim window
    results = deliver(..., threads=threads.spots)                  # a follow-up in its parent's thread
    updates = update_parents(settings, threads, to_post, results)  # chat.update, no lock held
    record_threads(con, results, updates)                          # in the record window

A follow-up goes in its parent's thread when the parent was posted through the Web API (its channel and ts are
stored, or it was posted earlier in the same batch); otherwise (a webhook, a parent refused for good, one posted
before threads existed) it is a top-level message that stands on its own. The outbox never claims a follow-up
whose parent is still waiting (tasks/store/outbox.py), so a thread is never skipped for want of patience.

Once a follow-up is in a thread, its parent is rewritten (`ended_parent`: what happened since, one line per event
at the top). An update Slack did not take leaves the parent `update_due`: the next delivery does it again
(an update is idempotent: the same text twice changes nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tasks.alerts.slack_client import DeliveryResult, Spot, update_message
from tasks.alerts.slack_settings import SlackSettings
from tasks.core.render.decision_groups import ended_parent
from tasks.core.types import Alert
from tasks.store.alert_threads import (
    Parent,
    follow_ups,
    parents_due,
    record_posted,
    set_update_due,
    thread_parents,
)
from tasks.store.rows import Connection


@dataclass(frozen=True)
class Threads:
    """What the claim window read about the threads a batch touches."""

    parents: Mapping[str, Parent] = field(default_factory=dict)  # every parent concerned, by key
    spots: Mapping[str, Spot] = field(default_factory=dict)  # the posted ones: where they are
    earlier: Mapping[str, Sequence[Alert]] = field(default_factory=dict)  # follow-ups already in each thread
    due: tuple[str, ...] = ()  # parents owed an update from an earlier delivery


def read_threads(con: Connection, claimed: Sequence[Alert]) -> Threads:
    due = tuple(parents_due(con))
    keys = {a.thread_key for a in claimed if a.thread_key} | set(due)
    parents = thread_parents(con, keys)
    spots = {k: Spot(str(p.channel), str(p.ts)) for k, p in parents.items() if p.postable_in}
    return Threads(parents, spots, follow_ups(con, keys), due)


def _posted_spots(threads: Threads, results: Sequence[DeliveryResult]) -> dict[str, Spot]:
    """Every parent's spot: stored, or posted in this batch."""
    spots = dict(threads.spots)
    spots.update({r.key: Spot(r.channel, r.ts) for r in results if r.sent and r.channel and r.ts})
    return spots


def update_parents(settings: SlackSettings, threads: Threads, posted: Sequence[Alert],
                   results: Sequence[DeliveryResult], pace: Callable[[], None] | None = None) -> dict[str, str | None]:
    """Rewrite each parent that got a follow-up in its thread now, or was owed an update: parent key -> None
    (updated) or Slack's error (owed again)."""
    if settings.transport != "web":
        return {}
    sent = {r.key for r in results if r.sent}
    spots = _posted_spots(threads, results)
    new: dict[str, list[Alert]] = {}
    for a in posted:
        if a.key in sent and a.thread_key and a.thread_key in spots and a.thread_key in threads.parents:
            new.setdefault(a.thread_key, []).append(a)
    outcome: dict[str, str | None] = {}
    for key in dict.fromkeys([*new, *threads.due]):
        parent, spot = threads.parents.get(key), spots.get(key)
        if parent is None or spot is None:
            continue
        if pace is not None:
            pace()
        body = ended_parent(parent.alert, [*threads.earlier.get(key, ()), *new.get(key, ())])
        outcome[key] = update_message(settings, spot, body)
    return outcome


def record_threads(con: Connection, results: Sequence[DeliveryResult], updates: Mapping[str, str | None]) -> None:
    """Where each posted alert is; which parents still owe their update."""
    for r in results:
        if r.sent:
            record_posted(con, r.key, r.channel, r.ts)
    for key, error in updates.items():
        set_update_due(con, key, error is not None)
