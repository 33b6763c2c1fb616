"""Alerts about the canary itself that cannot go through the outbox (pure): the files a round keeps beside its
database cannot be written. (The unreadable database's alert is `render_store_unreadable_alert`.)"""

from __future__ import annotations

from datetime import datetime

from tasks.core.render.slack import build_alert
from tasks.core.render.text import code
from tasks.core.types import Alert


def render_spool_unwritable_alert(db_path: str, error: str, now: datetime) -> Alert:
    """A round's journal or deferred round could not be written, next to the database or in the fallback."""
    return build_alert(
        key=f"spool_unwritable|{db_path}|{now:%Y-%m-%d}", kind="spool_unwritable", model="(every model)",
        tag=None, created_at=now, title="The canary cannot write its round files",
        digest_line="Ignore lists: the last published files stay in force",
        sections=[
            f"{code(db_path)}: {code(error, 300)}. Rounds keep probing and save into the database while it takes "
            "them, but a round that dies now cannot be marked `crashed`, and a round the database refuses is lost; "
            "`canary run` exits 1.",
            "*What to do:* free space on the disk of the database and of the temp directory (TMPDIR), or fix "
            "their permissions; `canary status` says whether the database itself is readable.",
        ],
    )
