"""Route events (failovers and degraded marks) as data, persisted through small sinks.

* `RouteEventSink`       protocol: `write(events)`; raises on failure (the batcher keeps the events)
  + `JsonlEventSink`     one JSON object per line, appended (open, write, close per batch)
  + `DuckDBEventSink`    `tasks.store.append_route_events(db_path, events)`, imported lazily; the store
                         opens and closes the file per call, so DuckDB is never held between windows
* `Batcher`              buffers records in memory; `flush()` (called from a background thread every
                         `flush_interval_s` and at shutdown) hands them to its sink in one batch; a failed
                         write keeps them for the next window (bounded: the oldest are dropped and counted)

`JsonlSink` writes plain dicts (the savings measurements use it).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from tasks.core.types import RouteEvent
from tasks.secrets import redact

log = logging.getLogger("router.events")

#: Records kept while a sink keeps failing; past it the oldest are dropped (and counted in `dropped`).
MAX_BUFFERED = 10_000

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class RouteEventSink(Protocol):
    def write(self, events: Sequence[RouteEvent]) -> None: ...


class RecordSink(Protocol[T_contra]):
    def write(self, records: Sequence[T_contra]) -> None: ...


def event_to_json(event: RouteEvent) -> dict[str, Any]:
    """One JSONL record; free-text fields pass through the redactor (a key or URL password never lands)."""
    return {
        "at": event.at.isoformat(),
        "key": redact(event.key),
        "tier": event.tier,
        "upstream": redact(event.upstream),
        "reason": redact(event.reason),
        "latency_ms": event.latency_ms,
        "model": event.model,
    }


def event_from_json(doc: dict[str, Any]) -> RouteEvent:
    return RouteEvent(
        at=datetime.fromisoformat(doc["at"]),
        key=doc["key"],
        tier=int(doc["tier"]),
        upstream=doc["upstream"],
        reason=doc["reason"],
        latency_ms=doc.get("latency_ms"),
        model=doc.get("model"),
    )


class JsonlSink:
    """Appends dicts as JSON lines; the file and its folder are created on first write."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def write(self, records: Sequence[dict[str, Any]]) -> None:
        if not records:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(text)


class JsonlEventSink:
    def __init__(self, path: str | Path) -> None:
        self._sink = JsonlSink(path)
        self.path = self._sink.path

    def write(self, events: Sequence[RouteEvent]) -> None:
        self._sink.write([event_to_json(e) for e in events])


def read_events(path: str | Path) -> list[RouteEvent]:
    """Every event of a JSONL file (skipping a torn last line)."""
    events: list[RouteEvent] = []
    p = Path(path)
    if not p.exists():
        return events
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            events.append(event_from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue
    return events


class DuckDBEventSink:
    def __init__(self, db_path: str | Path) -> None:
        self.db_path = str(db_path)

    def write(self, events: Sequence[RouteEvent]) -> None:
        if not events:
            return
        from tasks.store import append_route_events  # lazy: the router runs without DuckDB loaded

        append_route_events(self.db_path, list(events))


class Batcher(Generic[T]):
    """Thread-safe buffer in front of one sink; `add` never blocks on I/O."""

    def __init__(self, sink: RecordSink[T], name: str, max_buffered: int = MAX_BUFFERED) -> None:
        self.sink = sink
        self.name = name
        self.max_buffered = max_buffered
        self.dropped = 0
        self.written = 0
        self._buffer: list[T] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()

    def add(self, records: Sequence[T]) -> None:
        with self._lock:
            self._buffer.extend(records)
            overflow = len(self._buffer) - self.max_buffered
            if overflow > 0:
                del self._buffer[:overflow]
                self.dropped += overflow

    def pending(self) -> int:
        with self._lock:
            return len(self._buffer)

    def flush(self) -> int:
        """Write everything buffered in one batch; on failure keep it for the next window. Returns written."""
        with self._flush_lock:
            with self._lock:
                batch, self._buffer = self._buffer, []
            if not batch:
                return 0
            try:
                self.sink.write(batch)
            except Exception as exc:
                log.warning(
                    "%s sink failed (%s: %s); %d records kept for the next window",
                    self.name,
                    type(exc).__name__,
                    redact(str(exc))[:200],
                    len(batch),
                )
                with self._lock:
                    self._buffer[:0] = batch
                    overflow = len(self._buffer) - self.max_buffered
                    if overflow > 0:
                        del self._buffer[:overflow]
                        self.dropped += overflow
                return 0
            self.written += len(batch)
            return len(batch)


def event_batchers(events_path: str | None, events_db: str | None) -> list[Batcher[RouteEvent]]:
    """The configured event sinks, each behind its own batcher (a locked DuckDB never repeats JSONL lines)."""
    batchers: list[Batcher[RouteEvent]] = []
    if events_path:
        batchers.append(Batcher(JsonlEventSink(events_path), "route-events-jsonl"))
    if events_db:
        batchers.append(Batcher(DuckDBEventSink(events_db), "route-events-duckdb"))
    return batchers


def flush_all(batchers: Sequence[Batcher[Any]], on_error: Callable[[Exception], None] | None = None) -> int:
    written = 0
    for batcher in batchers:
        try:
            written += batcher.flush()
        except Exception as exc:  # a batcher never raises, but the flusher thread must survive anything
            if on_error:
                on_error(exc)
    return written
