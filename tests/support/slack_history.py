"""Rules of the Slack Web API for the Slack double (tests/support/slack_server.py): conversations.history's window,
and chat.postMessage's rate limit.

A ts is a string `"<unix seconds>.<6 digits>"`; compared here as integer microseconds, so bounds are exact.
`oldest` and `latest` are exclusive unless `inclusive` is true; `limit` defaults to 100, at most 999.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

HISTORY_DEFAULT_LIMIT = 100
HISTORY_MAX_LIMIT = 999


@dataclass(frozen=True)
class HistoryWindow:
    """conversations.history's range: `oldest` < ts < `latest` (<= with `inclusive`), at most `limit`."""

    oldest_us: int | None
    latest_us: int | None
    inclusive: bool
    limit: int

    @classmethod
    def of(cls, query: dict[str, Any]) -> HistoryWindow:
        """ValueError for a ts or limit that is not a number (Slack: `invalid_arguments`)."""
        oldest, latest = query.get("oldest"), query.get("latest")
        limit = int(query.get("limit") or HISTORY_DEFAULT_LIMIT)
        return cls(
            oldest_us=ts_us(str(oldest)) if oldest not in (None, "") else None,
            latest_us=ts_us(str(latest)) if latest not in (None, "") else None,
            inclusive=truthy(query.get("inclusive")),
            limit=min(max(limit, 1), HISTORY_MAX_LIMIT),
        )

    def holds(self, ts: str) -> bool:
        at = ts_us(ts)
        if self.oldest_us is not None and (at < self.oldest_us or (at == self.oldest_us and not self.inclusive)):
            return False
        return self.latest_us is None or at < self.latest_us or (at == self.latest_us and self.inclusive)


def channel_messages(posted: list[tuple[str, dict[str, Any]]], window: HistoryWindow, replies_of: str | None,
                     with_meta: bool) -> list[dict[str, Any]]:
    """The messages of (ts, body as last updated) pairs that conversations.history shows in `window` (no thread
    reply: Slack lists them only in their thread), or, with `replies_of` (a parent's ts), conversations.replies
    shows: the parent and its replies. Metadata only when asked (`include_all_metadata`)."""
    out = []
    for ts, body in posted:
        thread = body.get("thread_ts")
        if replies_of is not None:
            if replies_of not in (ts, thread):
                continue
        elif thread or not window.holds(ts):
            continue
        message: dict[str, Any] = {"type": "message", "text": body.get("text", ""), "ts": ts}
        if thread:
            message["thread_ts"] = thread
        meta = body.get("metadata")
        if with_meta and meta:
            message["metadata"] = json.loads(meta) if isinstance(meta, str) else meta
        out.append(message)
    return out


def ts_us(ts: str) -> int:
    """A Slack ts ("1790000000.000123", or a plain number) in integer microseconds: exact comparisons."""
    seconds, _, fraction = ts.strip().partition(".")
    if not seconds.isdigit() or (fraction and not fraction.isdigit()):
        raise ValueError(f"not a Slack ts: {ts!r}")
    return int(seconds) * 1_000_000 + int((fraction + "000000")[:6])


def truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1")


class RateLimiter:
    """chat.postMessage's limit on one channel: `per_s` posts a second once a burst of `burst` is spent (a token
    bucket on a monotonic clock). Slack answers a post past it 429 with Retry-After in whole seconds."""

    def __init__(self, per_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_s, self.burst, self.clock = per_s, burst, clock
        self._tokens, self._at = float(burst), clock()
        self._lock = threading.Lock()

    def refused(self) -> int | None:
        """None: the post may go (its token taken); else the Retry-After, seconds until the next token."""
        with self._lock:
            now = self.clock()
            self._tokens, self._at = min(float(self.burst), self._tokens + (now - self._at) * self.per_s), now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return None
            return max(1, math.ceil((1.0 - self._tokens) / self.per_s))
