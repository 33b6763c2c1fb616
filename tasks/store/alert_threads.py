"""Slack threads in the store: where each posted alert is, which suspension a message announced, which parent
messages owe an update (tasks/core/render/decision_groups.py says how a round's decisions become messages).

Migration 15 (`ALERT_THREADS_SQL`):
* ``alerts.thread_key``: a follow-up's parent (the key of the alert whose thread it goes in); NULL: top level.
* ``alerts.slack_channel`` / ``alerts.slack_message_id``: the channel ID and the `ts` (Slack's id of a message)
  of the posted alert; Web API only: a webhook answers no ts, so its follow-ups go out as top-level messages.
* ``alerts.update_due``: a follow-up was posted in this alert's thread and the parent's `chat.update` (how its
  suspension ended) is not done yet; the next delivery does it.
* ``decisions.thread_key``: the message whose thread follows this decision's suspension (a suspension's `ts` is
  its message's ``alerts.slack_message_id``); set when the decision is saved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tasks.core.types import Alert
from tasks.store.rows import Connection, fetch_dicts

#: `IF NOT EXISTS`: a file whose migration rows were rolled back by hand (tests rebuild an older file that way)
#: takes it again without tripping on its own columns.
ALERT_THREADS_SQL = """
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS thread_key VARCHAR;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS slack_channel VARCHAR;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS slack_message_id VARCHAR;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS update_due BOOLEAN DEFAULT false;
ALTER TABLE decisions ADD COLUMN IF NOT EXISTS thread_key VARCHAR
"""


@dataclass(frozen=True)
class Parent:
    """A follow-up's parent as delivery needs it: where it was posted (None: not, or by webhook) and its state."""

    alert: Alert
    status: str  # pending | sent | failed
    channel: str | None = None
    ts: str | None = None

    @property
    def postable_in(self) -> bool:
        """Its thread exists: the follow-up goes in it."""
        return self.status == "sent" and bool(self.ts and self.channel)


def record_decision_threads(con: Connection, threads: Mapping[str, str]) -> None:
    """Name each saved decision's thread (decision_id -> the key of its suspension's message)."""
    for decision_id, key in threads.items():
        con.execute("UPDATE decisions SET thread_key = ? WHERE decision_id = ? AND thread_key IS NULL",
                    [key, decision_id])


def suspension_threads(con: Connection, model: str, tags: Iterable[str]) -> dict[str, str]:
    """tag -> the message that announced its latest suspension (real or shadow), for the `tags` given (the
    suspended ones): their events go in that thread. A suspension saved before threads existed has none."""
    wanted = sorted(set(tags))
    if not wanted:
        return {}
    rows = fetch_dicts(
        con,
        "SELECT tag, thread_key FROM decisions WHERE model = ? AND action IN ('suspend', 'would_suspend')"
        " AND tag IN (SELECT unnest(?::VARCHAR[])) QUALIFY row_number() OVER (PARTITION BY tag"
        " ORDER BY decided_at DESC, decision_id DESC) = 1",
        [model, wanted],
    )
    return {str(r["tag"]): str(r["thread_key"]) for r in rows if r["thread_key"]}


def thread_parents(con: Connection, keys: Iterable[str]) -> dict[str, Parent]:
    """The parent alerts of `keys` (parent keys), by key."""
    from tasks.store.outbox import alert_from_row

    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = fetch_dicts(con, "SELECT * FROM alerts WHERE key IN (SELECT unnest(?::VARCHAR[]))", [wanted])
    return {str(r["key"]): Parent(alert_from_row(r), str(r["status"]), r["slack_channel"], r["slack_message_id"])
            for r in rows}


def follow_ups(con: Connection, parent_keys: Iterable[str]) -> dict[str, list[Alert]]:
    """The follow-ups posted so far in each parent's thread (oldest first), by parent key."""
    from tasks.store.outbox import alert_from_row

    wanted = sorted(set(parent_keys))
    if not wanted:
        return {}
    rows = fetch_dicts(
        con, "SELECT * FROM alerts WHERE status = 'sent' AND thread_key IN (SELECT unnest(?::VARCHAR[]))"
        " ORDER BY created_at, key", [wanted])
    out: dict[str, list[Alert]] = {}
    for r in rows:
        out.setdefault(str(r["thread_key"]), []).append(alert_from_row(r))
    return out


def record_posted(con: Connection, key: str, channel: str | None, ts: str | None) -> None:
    """Where Slack put a posted alert (the Web API answers its channel ID and ts)."""
    if ts:
        con.execute("UPDATE alerts SET slack_channel = ?, slack_message_id = ? WHERE key = ?", [channel, ts, key])


def set_update_due(con: Connection, key: str, due: bool) -> None:
    con.execute("UPDATE alerts SET update_due = ? WHERE key = ?", [due, key])


def parents_due(con: Connection) -> list[str]:
    """Parents whose update (how their suspensions ended) is owed, oldest first."""
    rows = fetch_dicts(con, "SELECT key FROM alerts WHERE update_due ORDER BY created_at, key")
    return [str(r["key"]) for r in rows]

