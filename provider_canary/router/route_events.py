"""Route events (failovers and degraded marks) as data, persisted through small sinks.

* `RouteEventSink`       protocol: `write(events)`; raises on failure (the batcher keeps the events)
  + `JsonlRouteEventSink`     one JSON object per line, appended (open, write, close per batch)
  + `DuckDBRouteEventSink`    `tasks.store.append_route_events(db_path, events)`, imported lazily; the store
                         opens and closes the file per call, so DuckDB is never held between windows
* `Batcher`              buffers records in memory; `flush()` (called from a background thread every
                         `flush_interval_s` and at shutdown) hands them to its sink in one batch; a failed
                         write keeps them for the next window (bounded: the oldest are dropped and counted)
* `Spill`                what a DuckDB batcher still holds when the router stops (the file stayed busy through
                         the last flush) is kept on disk beside the database, `<events_db>.router-pending/
                         <kind>-<pid>-<ns>.jsonl`, and handed back to the batcher at the next start; the file
                         is removed once the batcher wrote it (a crash in between leaves it for the next start)

`JsonlSink` writes plain dicts (the savings measurements use it).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from tasks.core.types import RouteEvent
from tasks.runtime.secrets import redact_known_secrets

log = logging.getLogger("router.events")

#: Records kept while a sink keeps failing; past it the oldest are dropped (and counted in `dropped`).
MAX_BUFFERED = 10_000

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class RouteEventSink(Protocol):
    def write(self, events: Sequence[RouteEvent]) -> None: ...


class RecordSink(Protocol[T_contra]):
    def write(self, records: Sequence[T_contra]) -> None: ...


def route_event_to_json(event: RouteEvent) -> dict[str, Any]:
    """One JSONL record; free-text fields pass through the redactor (a key or URL password never lands)."""
    return {
        "at": event.at.isoformat(),
        "key": redact_known_secrets(event.key),
        "tier": event.tier,
        "upstream": redact_known_secrets(event.upstream),
        "reason": redact_known_secrets(event.reason),
        "latency_ms": event.latency_ms,
        "model": event.model,
        "client": event.client,
    }


def route_event_from_json(doc: dict[str, Any]) -> RouteEvent:
    return RouteEvent(
        at=datetime.fromisoformat(doc["at"]),
        key=doc["key"],
        tier=int(doc["tier"]),
        upstream=doc["upstream"],
        reason=doc["reason"],
        latency_ms=doc.get("latency_ms"),
        model=doc.get("model"),
        client=doc.get("client"),
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


class JsonlRouteEventSink:
    def __init__(self, path: str | Path) -> None:
        self._sink = JsonlSink(path)
        self.path = self._sink.path

    def write(self, events: Sequence[RouteEvent]) -> None:
        self._sink.write([route_event_to_json(e) for e in events])


def read_route_events(path: str | Path) -> list[RouteEvent]:
    """Every event of a JSONL file (skipping a torn last line)."""
    events: list[RouteEvent] = []
    p = Path(path)
    if not p.exists():
        return events
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            events.append(route_event_from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue
    return events


#: Seconds a DuckDB sink waits for the file (a notebook holding it) before keeping its batch for the next window.
DUCKDB_LOCK_TIMEOUT_S = 5.0


def in_duckdb_window(db_path: str, lock_timeout_s: float, write: Callable[[Any], object]) -> None:
    """`write(connection)` in one short write window of `db_path` (the store is imported lazily: the router
    runs without DuckDB loaded until it writes)."""
    from tasks.store.connection import open_store

    with open_store(db_path, snapshot=False, lock_timeout_s=lock_timeout_s) as con:
        write(con)


class DuckDBRouteEventSink:
    def __init__(self, db_path: str | Path) -> None:
        self.db_path = str(db_path)
        self.lock_timeout_s = DUCKDB_LOCK_TIMEOUT_S

    def write(self, events: Sequence[RouteEvent]) -> None:
        if not events:
            return
        from tasks.store import append_route_events

        in_duckdb_window(self.db_path, self.lock_timeout_s, lambda con: append_route_events(con, list(events)))


class Spill(Generic[T]):
    """Records kept on disk for the next start (module docstring); one per DuckDB batcher."""

    def __init__(
        self, directory: str | Path, kind: str, to_json: Callable[[T], dict[str, Any]],
        from_json: Callable[[dict[str, Any]], T],
    ) -> None:
        self.directory = Path(directory)
        self.kind = kind
        self._to_json, self._from_json = to_json, from_json
        self._claimed: list[Path] = []
        self.restored = 0  # records read back at start
        self.pending = 0  # of those, not yet written by the batcher

    def restore(self) -> list[T]:
        """Claim this kind's files (a rename: two routers never both take one) and read their records; a line
        that does not parse is skipped (and logged)."""
        records: list[T] = []
        for path in sorted(self.directory.glob(f"{self.kind}-*.jsonl")):
            claimed = path.with_name(f"{self.kind}-{os.getpid()}-{time.time_ns()}.jsonl")
            try:
                path.rename(claimed)
                lines = claimed.read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            self._claimed.append(claimed)
            for line in lines:
                try:
                    records.append(self._from_json(json.loads(line)))
                except (ValueError, KeyError, TypeError):
                    log.warning("%s: skipped a line of %s that does not parse", self.kind, claimed.name)
        self.restored = self.pending = len(records)
        if records:
            log.warning("%s: %d records kept on disk at the last stop, written at the next flush",
                        self.kind, len(records))
        return records

    def written(self) -> None:
        """The batcher wrote everything it held, restored records included: their files go."""
        for path in self._claimed:
            path.unlink(missing_ok=True)
        self._claimed.clear()
        self.pending = 0

    def save(self, records: Sequence[T]) -> Path:
        """Keep `records` for the next start (atomically: the file is whole or absent), replacing claimed files."""
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"{self.kind}-{os.getpid()}-{time.time_ns()}.jsonl"
        tmp = self.directory / f".{final.name}.tmp"
        text = "".join(json.dumps(self._to_json(r), separators=(",", ":")) + "\n" for r in records)
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        self.written()
        return final


class Batcher(Generic[T]):
    """Thread-safe buffer in front of one sink; `add` never blocks on I/O."""

    def __init__(
        self, sink: RecordSink[T], name: str, max_buffered: int = MAX_BUFFERED, spill: Spill[T] | None = None
    ) -> None:
        self.sink = sink
        self.name = name
        self.max_buffered = max_buffered
        self.spill = spill
        self.dropped = 0
        self.written = 0
        self._buffer: list[T] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        if spill is not None:
            self.add(spill.restore())

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
                    redact_known_secrets(str(exc))[:200],
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
            if self.spill is not None and self.spill.pending:
                self.spill.written()
            return len(batch)

    def close(self) -> int:
        """At shutdown, after the last flush: what is still buffered goes to the spill (if any). Returns kept."""
        with self._flush_lock, self._lock:
            batch, self._buffer = self._buffer, []
        if not batch or self.spill is None:
            if batch:
                log.error("%s: %d records lost at shutdown (no place to keep them)", self.name, len(batch))
            return 0
        try:
            path = self.spill.save(batch)
        except OSError as exc:
            log.error("%s: %d records lost at shutdown: cannot keep them on disk (%s)", self.name, len(batch), exc)
            return 0
        log.warning("%s: the sink stayed busy; %d records kept in %s for the next start", self.name, len(batch), path)
        return len(batch)


def spill_dir(events_db: str) -> Path:
    """Where a router keeps what it could not write to `events_db` when it stopped."""
    return Path(f"{events_db}.router-pending")


def route_event_batchers(events_path: str | None, events_db: str | None) -> list[Batcher[RouteEvent]]:
    """The configured event sinks, each behind its own batcher (a locked DuckDB never repeats JSONL lines)."""
    batchers: list[Batcher[RouteEvent]] = []
    if events_path:
        batchers.append(Batcher(JsonlRouteEventSink(events_path), "route-events-jsonl"))
    if events_db:
        spill = Spill(spill_dir(events_db), "route_events", route_event_to_json, route_event_from_json)
        batchers.append(Batcher(DuckDBRouteEventSink(events_db), "route-events-duckdb", spill=spill))
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
