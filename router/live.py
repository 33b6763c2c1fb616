"""Live traffic per endpoint: what happened to every attempt the router made on a tier, counted per minute.

    recorder = LiveRecorder(clock, batchers)        # the shell holds one
    recorder.attempt(route, tier_no, outcome, provider_name)

Pure parts: `pinned_tag` (the tier's endpoint when its provider preferences name exactly one), `outcome_of`
(a failover or abort reason -> `LiveOutcome`), `provider_in` (the `provider` of a JSON answer or the
`metadata.provider_name` of an error body). `aggregate` sums records of one minute, endpoint and outcome, so
the store gets one row per (minute, endpoint, outcome), not one per request. The watcher reads them back as
a failure rate per endpoint (tasks/core/suspicion.py): a suspicion, never a verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from router.events import Batcher
from router.routes import Route, Tier
from router.stream import Gate
from tasks.clock import Clock
from tasks.core.live_records import LiveCount, LiveOutcome

_PROVIDER_NAME = re.compile(r'"provider_name"\s*:\s*"([^"\\]{1,80})"')

#: Failover / abort reasons of router/upstream.py and router/stream.py -> what they mean for the endpoint.
_REASONS: Mapping[str, LiveOutcome] = {
    "connect": LiveOutcome.TRANSPORT,
    "timeout": LiveOutcome.TRANSPORT,
    "transport_error": LiveOutcome.TRANSPORT,
    "first_chunk_timeout": LiveOutcome.FIRST_CHUNK_TIMEOUT,
    "stream_error_before_commit": LiveOutcome.CUT_STREAM,
    "stream_ended_before_commit": LiveOutcome.UPSTREAM_ERROR,  # a 200 whose stream ended with nothing in it
    "error_chunk_before_commit": LiveOutcome.UPSTREAM_ERROR,
    "bad_frame_before_commit": LiveOutcome.PROTOCOL_VIOLATION,
    "stream_cut_after_commit": LiveOutcome.CUT_STREAM,
    "stream_error_after_commit": LiveOutcome.CUT_STREAM,
    "idle_timeout_after_commit": LiveOutcome.CUT_STREAM,
}


def outcome_of(reason: str) -> LiveOutcome:
    """The live outcome of a failover or abort reason (unknown reasons are transport: never quality)."""
    if reason == "http_429":
        return LiveOutcome.HTTP_429
    if reason.startswith("http_"):
        return LiveOutcome.HTTP_5XX
    if reason.startswith("error_in_200_"):
        return LiveOutcome.UPSTREAM_ERROR
    return _REASONS.get(reason, LiveOutcome.TRANSPORT)


def pinned_tag(tier: Tier) -> str | None:
    """The endpoint tag a tier is pinned to: `provider.only` (or, without it, `provider.order`) naming one."""
    for key in ("only", "order"):
        value = tier.provider.get(key)
        if isinstance(value, list) and value:
            return value[0] if len(value) == 1 and isinstance(value[0], str) else None
    return None


def provider_in(text: bytes | str) -> str | None:
    """The provider an answer or error body names: a JSON answer's `provider`, an error's
    `metadata.provider_name` (also found in a body cut short)."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        if isinstance(doc.get("provider"), str) and doc["provider"]:
            return str(doc["provider"])
        error = doc.get("error")
        meta = error.get("metadata") if isinstance(error, dict) else None
        name = meta.get("provider_name") if isinstance(meta, dict) else None
        return name if isinstance(name, str) and name else None
    found = _PROVIDER_NAME.search(raw)
    return found.group(1) if found else None


def aggregate(records: Sequence[LiveCount]) -> list[LiveCount]:
    """One record per (minute, model, route, tier, tag, provider, outcome, quality, reason), requests summed;
    first-seen order."""
    sums: dict[tuple[Any, ...], LiveCount] = {}
    for r in records:
        minute = r.minute_at.replace(second=0, microsecond=0)
        key = (minute, r.model, r.route_key, r.tier, r.tag, r.provider_name, r.outcome, r.quality, r.reason)
        seen = sums.get(key)
        sums[key] = LiveCount(minute, r.model, r.route_key, r.tier, r.tag, r.provider_name, r.outcome,
                              r.requests + (seen.requests if seen else 0), r.quality, r.reason)
    return list(sums.values())


class DuckDBLiveSink:
    """`tasks.store.append_live_counts(db_path, counts)` (imported lazily), aggregated per minute first."""

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path

    def write(self, records: Sequence[LiveCount]) -> None:
        if not records:
            return
        from tasks.store.live import append_live_counts

        append_live_counts(self.db_path, aggregate(records))


def live_batchers(events_db: str | None) -> list[Batcher[LiveCount]]:
    """Live counts go to the database the route events go to (`events_db`); none without one."""
    return [Batcher(DuckDBLiveSink(events_db), "live-requests-duckdb")] if events_db else []


class LiveRecorder:
    """Counts every attempt on a tier; `add` never blocks (the batchers flush from the router's thread)."""

    def __init__(self, clock: Clock, batchers: Sequence[Batcher[LiveCount]]) -> None:
        self.clock = clock
        self.batchers = list(batchers)

    def attempt(self, route: Route, tier_no: int, outcome: LiveOutcome, provider_name: str | None) -> None:
        if not self.batchers:
            return
        tier = route.tiers[tier_no - 1]
        model = tier.canary_model or tier.model
        record = LiveCount(self.clock.now().replace(second=0, microsecond=0), model, route.key, tier_no,
                           pinned_tag(tier), provider_name, outcome)
        for batcher in self.batchers:
            batcher.add([record])


def stream_outcome(gate: Gate, aborted: str | None) -> LiveOutcome:
    """How a committed stream ended: cut (the router aborted it), an upstream error (its own error chunk, or
    a `native_finish_reason` naming an error), else ok."""
    if aborted is not None:
        return outcome_of(aborted)
    if gate.errored or gate.native_error:
        return LiveOutcome.UPSTREAM_ERROR
    return LiveOutcome.OK
