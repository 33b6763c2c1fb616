"""When the database or the files beside it cannot be used, tell an admin anyway (shell).

The outbox lives in the database, so an unreadable file (or a full disk under it) would silence every alert, the
dead-man's included. These send one alert straight to Slack (or the log), at most once a day per database and
kind: a marker file in the spool directory (or, when that cannot be written, the fallback one) remembers the day
it was sent. A marker that cannot be written anywhere costs a repeated alert, never a missing one.

    alarm_unreadable_store(db, StoreError(...), now)   the database cannot be opened, read or written
    alarm_unwritable_spool(db, SpoolError(...), now)    a round's journal or spool cannot be written
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tasks.core.types import Alert
from tasks.errors import CanaryError, SpoolError, StoreError
from tasks.spool.journal import spool_dirs, write_kept

_log = logging.getLogger("canary.store")


def alarm_unreadable_store(db_path: str, error: StoreError, now: datetime, logger: Any = None) -> bool:
    """Alert that `db_path` cannot be read or written (not for a busy one). True when an alert went out now."""
    if error.busy:
        return False
    from tasks.core.render.fault_alerts import render_store_unreadable_alert

    return _alarm_once(db_path, "store-unreadable", error, now, render_store_unreadable_alert,
                       logger or _log, "The database cannot be read or written: %s")


def alarm_unwritable_spool(db_path: str, error: SpoolError, now: datetime, logger: Any = None) -> bool:
    """Alert that a round's journal or spool file could not be written anywhere. True when it went out now."""
    from tasks.core.render.fault_alerts import render_spool_unwritable_alert

    return _alarm_once(db_path, "spool-unwritable", error, now, render_spool_unwritable_alert, logger or _log,
                       "A round's files cannot be written beside the database: %s")


def _alarm_once(
    db_path: str, marker_name: str, error: CanaryError, now: datetime,
    render: Callable[[str, str, datetime], Alert], log: Any, log_line: str,
) -> bool:
    from tasks.alerts.slack_client import deliver
    from tasks.alerts.slack_settings import SlackSettings

    day = now.date().isoformat()
    name = marker_name + ".json"
    log.error(log_line, error)
    if any(_marker_day(d / name) == day for d in spool_dirs(db_path)):
        return False
    alert = render(db_path, str(error), now)
    try:
        [result] = deliver([alert], SlackSettings.from_env(), now=now, logger=log)
    except Exception as exc:  # Slack settings broken too: the log line above is all we can do
        log.error("Could not alert about the database: %s", type(exc).__name__)
        return False
    if result.sent:
        try:
            write_kept(db_path, name, {"day": day, "error": str(error)[:300]})
        except SpoolError:
            pass  # no marker: the next failure alerts again (better twice than never)
    return result.sent


def _marker_day(path: Any) -> str | None:
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("day"))
    except (OSError, ValueError, AttributeError):
        return None
