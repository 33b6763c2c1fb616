"""One delivery loop per Slack channel in a process, paced to Slack's limit (shell).

    summary = deliver_paced(db_path, settings, now, logger)     # a round's, the dead-man's, an admin command's

Up to `models_in_flight` rounds of a cycle reach their deliver step at about the same time. The first to arrive
becomes the channel's loop: it delivers the outbox pass after pass (tasks/alerts/delivery.py `deliver_outbox`, at most
`PASS_LIMIT` alerts a pass, so a pass ends well inside a claim's 60 s lease), every post and update taking the
channel's turn (about one a second, short bursts: tasks/core/pacing.py), until a pass leaves nothing due. The
others only say that more is queued (the loop makes one more pass over their database) and return at once:
their rounds do not wait, and this process never sends the channel two posts at once. A 429 holds the channel
for its Retry-After and the loop goes on after it (up to `MAX_WAIT_S`; a longer wait leaves the rest queued,
with their next try, for the next delivery), so a burst of suspensions reaches Slack in order within minutes,
not rounds. Each channel (or webhook, or Slack workspace behind SLACK_API_URL) has its own loop and bucket.

Several processes delivering to one channel at once (shards, a `canary-round` run beside a cycle) pace
themselves each; Slack's 429s, honoured, keep them within its limit, and the outbox's claims keep each alert
to one of them.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tasks.alerts.delivery import DeliverySummary, deliver_outbox, merged
from tasks.alerts.slack_settings import SlackSettings
from tasks.core.pacing import Bucket, Pace, hold, take

_log = logging.getLogger("canary.delivery")
#: Alerts claimed per pass: at one a second a pass lasts about this many seconds, far inside the claim lease.
PASS_LIMIT = 20
#: The longest Retry-After the loop waits out itself; past it the alerts wait for the next delivery.
MAX_WAIT_S = 120.0


@dataclass
class Pacer:
    """A channel's bucket (tasks/core/pacing.py) shared by the threads of this process; `wait` sleeps its turn."""

    pace: Pace = field(default_factory=Pace)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _bucket: Bucket | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self) -> None:
        with self._lock:
            now = self.clock()
            self._bucket, delay = take(self._bucket or Bucket.full(self.pace, now), self.pace, now)
        if delay > 0:
            self.sleep(delay)

    def hold(self, retry_after_s: float) -> None:
        with self._lock:
            now = self.clock()
            self._bucket = hold(self._bucket or Bucket.full(self.pace, now), now, retry_after_s)


@dataclass
class _Channel:
    pacer: Pacer
    lock: threading.Lock = field(default_factory=threading.Lock)
    running: bool = False
    queued: set[str] = field(default_factory=set)  # databases with alerts told of since the last pass


_channels: dict[str, _Channel] = {}
_channels_lock = threading.Lock()


def destination(settings: SlackSettings) -> str:
    """The channel a delivery goes to, as a key that shows no secret (the webhook URL is one: hashed)."""
    if settings.transport == "web":
        return f"web|{settings.api_url or 'slack'}|{settings.channel}"
    if settings.transport == "webhook" and settings.webhook_url is not None:
        return "webhook|" + hashlib.sha256(settings.webhook_url.get().encode()).hexdigest()[:16]
    return "log"


def _channel(key: str, pace: Pace | None) -> _Channel:
    with _channels_lock:
        if key not in _channels:
            _channels[key] = _Channel(Pacer(pace or Pace()))
        return _channels[key]


def deliver_paced(db_path: str, settings: SlackSettings, now: datetime, logger: Any = None, *,
                  pace: Pace | None = None, max_wait_s: float = MAX_WAIT_S) -> DeliverySummary:
    """Deliver `db_path`'s outbox through its channel's loop (the module docstring): this call runs the loop, or
    hands its alerts to the loop already running (`handed_over`) and returns at once. Without Slack (the log
    transport) there is nothing to pace: each caller writes what is due to its own log."""
    if settings.transport == "log":
        return deliver_outbox(db_path, settings, now, logger)
    ch = _channel(destination(settings), pace)
    with ch.lock:
        ch.queued.add(db_path)
        if ch.running:
            return DeliverySummary(settings.transport, handed_over=True)
        ch.running = True
    total = DeliverySummary(settings.transport)
    started = time.monotonic()
    try:
        while True:
            with ch.lock:
                if not ch.queued:
                    ch.running = False
                    return total
                databases = sorted(ch.queued)
                ch.queued.clear()
            for db in databases:
                total = merged(total, _drain(db, settings, now, started, logger, ch.pacer, max_wait_s))
    except BaseException:
        with ch.lock:
            ch.running = False
        raise


def _drain(db_path: str, settings: SlackSettings, now: datetime, started: float, logger: Any, pacer: Pacer,
           max_wait_s: float) -> DeliverySummary:
    """Passes over one outbox until nothing more is due (or Slack asks for a wait longer than `max_wait_s`)."""
    total = DeliverySummary(settings.transport)
    while True:
        at = now + timedelta(seconds=time.monotonic() - started)  # the caller's clock, moved on by the passes
        s = deliver_outbox(db_path, settings, at, logger, limit=PASS_LIMIT, pace=pacer.wait)
        total = merged(total, s)
        if s.rate_limited:  # a 429 stopped the pass: wait as Slack asked, then go on
            wait = s.retry_after_s if s.retry_after_s is not None else 1.0
            if wait > max_wait_s:
                (logger or _log).warning("Slack asked to wait %.0f s: %d alert(s) stay queued for the next delivery",
                                         wait, s.not_attempted + 1)
                return total
            pacer.hold(wait)
            pacer.sleep(wait)
            continue
        progressed = s.sent or s.deduplicated or s.gave_up
        if s.skipped or s.claimed < PASS_LIMIT or not progressed:
            return total
