"""When the database itself cannot be read, tell an admin anyway (shell).

The outbox lives in the database, so an unreadable file would silence every alert, the dead-man's included.
This sends one alert straight to Slack (or the log), at most once a day per database: a marker file in the
spool directory next to the database remembers the day it was sent.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from tasks.errors import StoreError
from tasks.spool import spool_dir

_log = logging.getLogger("canary.store")


def alarm_unreadable_store(db_path: str, error: StoreError, now: datetime, logger: Any = None) -> bool:
    """Alert that `db_path` cannot be read (not for a busy one). True when an alert went out now."""
    if error.busy:
        return False
    from tasks.alerts import SlackSettings, deliver
    from tasks.core.render.round_alerts import render_store_unreadable_alert

    log = logger or _log
    marker = spool_dir(db_path) / "store-unreadable.json"
    day = now.date().isoformat()
    try:
        if json.loads(marker.read_text(encoding="utf-8")).get("day") == day:
            return False
    except (OSError, ValueError):
        pass
    log.error("The database cannot be read: %s", error)
    alert = render_store_unreadable_alert(db_path, str(error), now)
    try:
        [result] = deliver([alert], SlackSettings.from_env(), now=now, logger=log)
    except Exception as exc:  # Slack settings broken too: the log line above is all we can do
        log.error("Could not alert about the database: %s", type(exc).__name__)
        return False
    if result.sent:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"day": day, "error": str(error)[:300]}), encoding="utf-8")
    return result.sent
