"""Pacing posts to one Slack channel (pure): a token bucket, the clock passed in.

Slack lets an app post about one message a second to a channel, with short bursts (chat.postMessage's
"special" rate limit); past it Slack answers 429 with Retry-After. The delivery loop of a channel
(tasks/alerts/delivery_loop.py) takes a token before each post or update and waits what `take` says:

    bucket = Bucket.full(pace, now)
    bucket, wait_s = take(bucket, pace, now)     # wait wait_s, then post
    bucket = hold(bucket, now, retry_after_s)    # a 429: the next token comes once Retry-After has passed

Times are seconds of a monotonic clock.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Posts a second to one channel: a little under Slack's one a second (chat.postMessage), so that the jitter
#: between our sending and Slack's counting does not make a post look early (at exactly 1.0 against a strict
#: limiter, about every other post was refused in tests/integration/test_slack_at_catalog_size.py).
DEFAULT_PER_S = 0.9
#: Messages that may go at once after a quiet spell ("short bursts allowed"); past them, one a second.
DEFAULT_BURST = 3


@dataclass(frozen=True, slots=True)
class Pace:
    per_s: float = DEFAULT_PER_S
    burst: int = DEFAULT_BURST


@dataclass(frozen=True, slots=True)
class Bucket:
    """`tokens` at time `at` (negative: owed, when `at` is in the future of a wait already handed out)."""

    tokens: float
    at: float

    @classmethod
    def full(cls, pace: Pace, now: float) -> Bucket:
        return cls(float(pace.burst), now)


def take(bucket: Bucket, pace: Pace, now: float) -> tuple[Bucket, float]:
    """Take one token at `now`: (the bucket after it, seconds to wait before the post may go)."""
    tokens = min(float(pace.burst), bucket.tokens + (now - bucket.at) * pace.per_s)
    if tokens >= 1.0:
        return Bucket(tokens - 1.0, now), 0.0
    wait = (1.0 - tokens) / pace.per_s
    return Bucket(0.0, now + wait), wait


def hold(bucket: Bucket, now: float, retry_after_s: float) -> Bucket:
    """Slack answered 429: one token once `retry_after_s` has passed, none before (later posts queue behind)."""
    return Bucket(1.0, max(bucket.at, now + max(0.0, retry_after_s)))
