"""HTTP rules shared by the probe, the router and the Slack client (pure: no I/O library, the clock passed in).

* `TRY_AGAIN_STATUSES` / `is_try_again_status(code)`: 408, 429 and every 5xx (524 and 529 included): the
  server could not or would not serve this request now, so the same request may succeed later or elsewhere.
  The probe judges such an answer (or a mid-stream `error.code`) `transport` (tasks/core/classify.py), the
  router fails over to the next tier (provider_canary/router/tiers.py), Slack's client keeps the alert for the next
  flush (tasks/alerts/slack_client.py). Every other code is about the request itself.
* `REDIRECT_STATUSES` / `is_redirect_status(code)`: an HTTP 3xx, never followed on a pinned API call.
* `parse_retry_after(value, now)`: a `Retry-After` header as seconds to wait (RFC 9110 10.2.3).

`parse_retry_after` reads both forms of the header: delta-seconds (`"30"`; a decimal fraction, `"1.5"`, is
read too, as the simulator sends one for a scaled clock) and an HTTP-date in any of the three formats RFC 9110
5.6.7 says a recipient must read (IMF-fixdate, RFC 850, asctime; a date without a zone is UTC). A date in the
past is 0.0 (retry now). Anything else is None, as if there were no header: a negative number, a sign, an
exponent, `inf`, `nan`, digits with `_` (Python's `float` reads all of those), a number too large for a float,
an unreadable date, an empty value.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

#: HTTP statuses (and mid-stream error codes) that mean "not now": try again later or elsewhere.
TRY_AGAIN_STATUSES: frozenset[int] = frozenset({408, 429} | set(range(500, 600)))

#: HTTP statuses that are a redirect: never followed on a pinned API call, never an answer.
REDIRECT_STATUSES: frozenset[int] = frozenset(range(300, 400))

#: delta-seconds (RFC 9110: 1*DIGIT), with an optional decimal fraction.
_DELTA_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def is_try_again_status(code: int | None) -> bool:
    """An HTTP status (or a mid-stream `error.code`) that means the server refused service for now."""
    return code is not None and code in TRY_AGAIN_STATUSES


def is_redirect_status(code: int | None) -> bool:
    """An HTTP 3xx: a redirect the probe never follows (tasks/core/classify.py "Redirects")."""
    return code is not None and code in REDIRECT_STATUSES


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds a `Retry-After` header asks to wait, measured from `now` (aware) for a date; None when the
    header is absent or unusable (see the module docstring for what is read)."""
    text = (value or "").strip()
    if not text:
        return None
    if _DELTA_SECONDS.fullmatch(text):
        seconds = float(text)
        return seconds if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())
