"""What the router saw of live traffic, per endpoint: the record it counts and the outcome vocabulary.

The router (provider_canary/router/live.py) counts every attempt it made on an upstream tier, per minute, endpoint and
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
    # judged answers (rows with a `quality` class): what the router's check of a passed answer said
    QUALITY_FAIL = "quality_fail"  # the answer broke its check (the `reason` says how); `ok` when it held

    @property
    def is_failure(self) -> bool:
        """Counts against the endpoint's live failure rate (ok and 429 do not)."""
        return self not in (LiveOutcome.OK, LiveOutcome.HTTP_429)

    @property
    def is_counted(self) -> bool:
        """Counts as a request in the rate's denominator (429s are left out of both, as OpenRouter does)."""
        return self is not LiveOutcome.HTTP_429


class LiveQuality(StrEnum):
    """The class of a check the router applies to an answer it passed (`live_requests.quality`).

    A row with a quality class counts *judged answers*, not attempts: `outcome` is `ok` (the check held) or
    `quality_fail`, and `reason` is the canary's `Reason` value (`ok` for a pass). The same request also has
    its attempt row (quality NULL), so attempt tallies read only rows without a class."""

    TOOLS = "tools"  # tool calls against the request's own `tools`
    STRUCTURED = "structured"  # the reply against the request's `response_format`
    EMPTY = "empty"  # no content and no tool call
    ENCODING = "encoding"  # broken decoding in the text (leading garbage, mojibake, BPE symbols)


@dataclass(frozen=True, slots=True)
class LiveCount:
    """`requests` attempts of one minute on one endpoint that ended as `outcome` (a row of `live_requests`).

    `quality` None: an attempt row; `reason` then holds the upstream's own word when it gave one (a
    `native_finish_reason` such as `network_error`, an error code), else None. `quality` set: a count of
    judged answers of that class, `reason` the canary's `Reason` value (`ok` when the check held)."""

    minute_at: datetime
    model: str  # the OpenRouter model id the tier asked for (its canary_model when set)
    route_key: str
    tier: int
    tag: str | None
    provider_name: str | None
    outcome: LiveOutcome
    requests: int = 1
    quality: LiveQuality | None = None
    reason: str | None = None
