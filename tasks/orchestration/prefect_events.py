"""Emitting the canary's events to Prefect (the shell of tasks/core/canary_events.py).

Called after the round's save (and by the dead-man check after it queued its alerts): the outbox already holds
every alert, so an event that cannot be emitted is logged and never fails the round. Only where a Prefect API is
configured: without PREFECT_API_URL Prefect would start a temporary server just to receive them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from tasks.core.canary_events import CanaryEvent

log = logging.getLogger(__name__)


def emit_canary_events(events: Sequence[CanaryEvent], logger: Any = log) -> int:
    """Emit each event (`prefect.events.emit_event`); returns how many were handed to Prefect's events worker."""
    if not events:
        return 0
    from prefect.events import emit_event
    from prefect.settings import get_current_settings

    if not get_current_settings().api.url:
        return 0
    handed = 0
    for e in events:
        try:
            sent = emit_event(e.event, dict(e.resource), occurred=e.occurred, payload=dict(e.payload),
                              related=[dict(r) for r in e.related], id=e.id)
        except Exception as exc:  # the outbox has the alert; an event is an extra path
            logger.warning("Prefect event %s not emitted: %s", e.event, type(exc).__name__)
            continue
        handed += sent is not None
    return handed
