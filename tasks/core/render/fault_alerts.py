"""Alerts about the canary itself that cannot go through the outbox (pure; tasks/alerts/store_alarm.py sends them
straight to Slack): the database cannot be read or written, or the files a round keeps beside it cannot be written. One
per database, kind and day (the key says so)."""

from __future__ import annotations

from datetime import datetime

from tasks.core.render.slack import build_alert
from tasks.core.render.text import code
from tasks.core.types import Alert


def _fault_alert(kind: str, db_path: str, now: datetime, title: str, what: str, to_do: str) -> Alert:
    return build_alert(
        key=f"{kind}|{db_path}|{now:%Y-%m-%d}", kind=kind, model="(every model)", tag=None, created_at=now,
        title=title, digest_line="Ignore lists: the last published files stay in force",
        sections=[what, f"*What to do:* {to_do}"],
    )


def render_store_unreadable_alert(db_path: str, error: str, now: datetime) -> Alert:
    """The database cannot be read or written (a damaged file, a full disk): no round can land, no queued alert
    can be read."""
    return _fault_alert(
        "store_unreadable", db_path, now, "The canary's database cannot be read or written",
        f"{code(db_path)}: {code(error, 300)}. Rounds keep probing and keep their results in the spool next to the "
        "database (or under the temp directory when that is full), but nothing is decided or published until the "
        "file can be read and written; `canary run` exits 1.",
        "on a full disk, free space; otherwise restore the file from a backup, or move it away (a new one is "
        "created by the next round; the spool lands into it).",
    )


def render_spool_unwritable_alert(db_path: str, error: str, now: datetime) -> Alert:
    """A round's journal or deferred round could not be written next to the database (or not at all)."""
    return _fault_alert(
        "spool_unwritable", db_path, now, "The canary cannot write its round files",
        f"{code(db_path)}: {code(error, 300)}. Rounds keep probing and save into the database while it takes "
        "them, but a round that dies now cannot be marked `crashed`, and a round the database refuses is lost; "
        "`canary run` exits 1.",
        "free space on the disk of the database and of the temp directory (TMPDIR), or fix their permissions; "
        "`canary status` says whether the database itself is readable.",
    )
