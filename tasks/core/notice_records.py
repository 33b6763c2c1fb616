"""Records that leave the round for someone else: an outbox alert (Slack) and a router failover event."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Alert:
    """A message waiting in the outbox. `key` is the idempotency key: one send per key, ever."""

    key: str
    created_at: datetime
    kind: str  # suspend, would_suspend, restore, expire, lift, floor_blocked, probe_weak, pin_mismatch, ...
    model: str
    tag: str | None
    text: str  # plain-text fallback
    blocks_json: str = "[]"  # Block Kit blocks, JSON
    #: A follow-up's parent: the key of the alert whose Slack thread it is posted in (a suspension's later events:
    #: restored, expired, lifted, suspended again). None: a top-level message.
    thread_key: str | None = None


@dataclass(frozen=True, slots=True)
class RouteEvent:
    """A router failover or degraded mark (a row of `route_events`)."""

    at: datetime
    key: str  # the routes-file key (model name or API key id; never the secret itself)
    tier: int
    upstream: str  # base URL + model (+ provider preferences summary)
    reason: str  # connect, http_429, http_503, first_chunk_timeout, stream_error_before_commit, ...
    latency_ms: float | None = None
    model: str | None = None
    client: str | None = None  # the router's client (its [[client]] name or key route); None: anonymous
