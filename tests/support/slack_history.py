"""conversations.history's window as the Slack Web API reads it, for the Slack double (tests/support/slack_server.py).

A ts is a string `"<unix seconds>.<6 digits>"`; compared here as integer microseconds, so bounds are exact.
`oldest` and `latest` are exclusive unless `inclusive` is true; `limit` defaults to 100, at most 999.
"""

from __future__ import annotations

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


def ts_us(ts: str) -> int:
    """A Slack ts ("1790000000.000123", or a plain number) in integer microseconds: exact comparisons."""
    seconds, _, fraction = ts.strip().partition(".")
    if not seconds.isdigit() or (fraction and not fraction.isdigit()):
        raise ValueError(f"not a Slack ts: {ts!r}")
    return int(seconds) * 1_000_000 + int((fraction + "000000")[:6])


def truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1")
