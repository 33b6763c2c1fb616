"""Live traffic per endpoint: what happened to every attempt the router made on a tier, and what the router's
judge said of every answer it passed, counted per minute (tasks/core/live_records.py holds the record).

    recorder = LiveRecorder(clock, batchers)        # the shell's attempt observer hangs it on
    (provider_canary/router/attempts.py) recorder.attempt(tier_attempt)                  # an attempt row: its outcome,
    the upstream's own word recorder.judged(judged_answer)                  # one row per quality class: ok or
    quality_fail, the Reason

Pure parts: `pinned_tag` (the tier's endpoint when its provider preferences name exactly one), `provider_in`
(the `provider` of a JSON answer or the `metadata.provider_name` of an error body), `stream_end` (how a
committed stream ended). What a failover reason counts as is provider_canary/router/reasons.py's. `aggregate` sums
records of one minute, endpoint, outcome, class and reason, so the store gets one row per such group, not one per
request. The watcher reads them back as failure rates per endpoint (tasks/core/suspicion.py): suspicions, never checks.
`count_to_json` / `count_from_json` keep counts on disk while the database is busy
(provider_canary/router/route_events.py `Spill`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import provider_canary.router.reasons as reasons
from provider_canary.router.attempts import JudgedAnswer, TierAttempt
from provider_canary.router.reasons import Cause, FailoverReason
from provider_canary.router.route_events import DUCKDB_LOCK_TIMEOUT_S, Batcher, Spill, in_duckdb_window, spill_dir
from provider_canary.router.routes import Tier
from provider_canary.router.stream import Gate
from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.runtime.clock import Clock

_PROVIDER_NAME = re.compile(r'"provider_name"\s*:\s*"([^"\\]{1,80})"')

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
    """`tasks.store.append_live_counts` (imported lazily) in one short write window, aggregated per minute first."""

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path
        self.lock_timeout_s = DUCKDB_LOCK_TIMEOUT_S

    def write(self, records: Sequence[LiveCount]) -> None:
        if not records:
            return
        from tasks.store.live import append_live_counts

        in_duckdb_window(self.db_path, self.lock_timeout_s, lambda con: append_live_counts(con, aggregate(records)))


def live_batchers(events_db: str | None) -> list[Batcher[LiveCount]]:
    """Live counts go to the database the route events go to (`events_db`); none without one. What the file
    could not take when the router stopped is kept beside it for the next start (provider_canary/router/route_events.py
    `Spill`)."""
    if not events_db:
        return []
    spill = Spill(spill_dir(events_db), "live_requests", count_to_json, count_from_json)
    return [Batcher(DuckDBLiveSink(events_db), "live-requests-duckdb", spill=spill)]


class LiveRecorder:
    """Counts every attempt on a tier and every judged answer; never blocks (the batchers flush from the
    router's thread)."""

    def __init__(self, clock: Clock, batchers: Sequence[Batcher[LiveCount]]) -> None:
        self.clock = clock
        self.batchers = list(batchers)

    def _row(self, attempt: TierAttempt | JudgedAnswer) -> LiveCount:
        tier = attempt.tier
        return LiveCount(self.clock.now().replace(second=0, microsecond=0), tier.canary_model or tier.model,
                         attempt.route.key, attempt.tier_no, pinned_tag(tier), attempt.provider, LiveOutcome.OK)

    def _add(self, records: list[LiveCount]) -> None:
        for batcher in self.batchers:
            batcher.add(records)

    def attempt(self, attempt: TierAttempt) -> None:
        outcome = attempt.live_outcome
        if not self.batchers or outcome is None:
            return
        row = self._row(attempt)
        self._add([LiveCount(row.minute_at, row.model, row.route_key, row.tier, row.tag, row.provider_name, outcome,
                             reason=attempt.live_word)])

    def judged(self, answer: JudgedAnswer) -> None:
        if not self.batchers or not answer.checks:
            return
        row = self._row(answer)
        self._add([
            LiveCount(row.minute_at, row.model, row.route_key, row.tier, row.tag, row.provider_name,
                      LiveOutcome.OK if v.passed else LiveOutcome.QUALITY_FAIL, quality=v.quality, reason=v.reason)
            for v in answer.checks
        ])


def stream_end(gate: Gate, aborted: FailoverReason | None) -> FailoverReason | None:
    """Why a committed stream did not end cleanly, or None: the router aborted it (cut, stalled, broken), or
    the upstream ended it with its own error (an error chunk, a `native_finish_reason` naming an error)."""
    if aborted is not None:
        return aborted
    if gate.errored or gate.native_error:
        word = gate.native_error if gate.native_error else gate.error_code
        return reasons.fixed(Cause.UPSTREAM_ERROR_AFTER_COMMIT, word)
    return None


def count_to_json(c: LiveCount) -> dict[str, Any]:
    return {"minute_at": c.minute_at.isoformat(), "model": c.model, "route_key": c.route_key, "tier": c.tier,
            "tag": c.tag, "provider_name": c.provider_name, "outcome": str(c.outcome), "requests": c.requests,
            "quality": str(c.quality) if c.quality is not None else None, "reason": c.reason}


def count_from_json(doc: dict[str, Any]) -> LiveCount:
    quality = doc.get("quality")
    return LiveCount(datetime.fromisoformat(doc["minute_at"]), doc["model"], doc["route_key"], int(doc["tier"]),
                     doc.get("tag"), doc.get("provider_name"), LiveOutcome(doc["outcome"]), int(doc["requests"]),
                     LiveQuality(quality) if quality is not None else None, doc.get("reason"))
