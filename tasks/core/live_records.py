"""What the router saw of live traffic, per endpoint: the record it counts and the outcome vocabulary.

The router (router/live.py) counts every attempt it made on an upstream tier, per minute, endpoint and
`LiveOutcome`, and the watcher (tasks/core/suspicion.py) turns the counts into a failure rate per endpoint.
A live count is a *suspicion*, never a verdict (docs/design.md "Suspicion").

The endpoint of a count is its `tag` when the tier is pinned to one tag (`provider.only` or `provider.order`
naming exactly one), else None; `provider_name` is the provider the upstream reported (the response's
`provider`, or an error's `metadata.provider_name`), which the watcher resolves to the tags it can be.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class LiveOutcome(StrEnum):
    """What happened to one attempt on one tier (the `live_requests.outcome` values)."""

    OK = "ok"  # committed (a stream's first content chunk, or a whole JSON answer) and ended cleanly
    FIRST_CHUNK_TIMEOUT = "first_chunk_timeout"  # no content chunk within the router's budget
    CUT_STREAM = "cut_stream"  # committed, then cut, stalled or broken before its end
    UPSTREAM_ERROR = "upstream_error"  # an HTTP 200 carrying an upstream error (error object, error finish)
    PROTOCOL_VIOLATION = "protocol_violation"  # an HTTP 200 that is not a usable event stream / JSON
    HTTP_429 = "http_429"  # rate limited: counted, never a failure (OpenRouter's uptime excludes it too)
    HTTP_5XX = "http_5xx"  # 408, 5xx, 524, 529 before any byte
    TRANSPORT = "transport"  # connect error or timeout before a response

    @property
    def is_failure(self) -> bool:
        """Counts against the endpoint's live failure rate (ok and 429 do not)."""
        return self not in (LiveOutcome.OK, LiveOutcome.HTTP_429)

    @property
    def is_counted(self) -> bool:
        """Counts as a request in the rate's denominator (429s are left out of both, as OpenRouter does)."""
        return self is not LiveOutcome.HTTP_429


@dataclass(frozen=True, slots=True)
class LiveCount:
    """`requests` attempts of one minute on one endpoint that ended as `outcome` (a row of `live_requests`)."""

    minute_at: datetime
    model: str  # the OpenRouter model id the tier asked for (its canary_model when set)
    route_key: str
    tier: int
    tag: str | None
    provider_name: str | None
    outcome: LiveOutcome
    requests: int = 1
