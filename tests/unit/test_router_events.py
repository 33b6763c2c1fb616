"""Route events as data: the JSONL sink and the batcher in front of every sink."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from provider_canary.router.route_events import Batcher, JsonlRouteEventSink, read_route_events, route_event_batchers
from tasks.core.types import RouteEvent

pytestmark = pytest.mark.unit


def _event(i: int) -> RouteEvent:
    return RouteEvent(
        at=datetime(2026, 11, 1, 12, 0, i, tzinfo=UTC),
        key="model:chat",
        tier=1,
        upstream="http://127.0.0.1:1/api/v1 m",
        reason="http_429",
        latency_ms=12.5,
        model="chat",
    )


def test_jsonl_sink_round_trips_events(tmp_path: Path) -> None:
    sink = JsonlRouteEventSink(tmp_path / "sub" / "events.jsonl")
    sink.write([_event(1), _event(2)])
    sink.write([_event(3)])
    assert read_route_events(sink.path) == [_event(1), _event(2), _event(3)]


class FlakySink:
    def __init__(self) -> None:
        self.fail = True
        self.batches: list[list[RouteEvent]] = []

    def write(self, events: Sequence[RouteEvent]) -> None:
        if self.fail:
            raise OSError("Could not set lock on file")
        self.batches.append(list(events))


def test_batcher_keeps_events_while_the_sink_fails_and_writes_them_once() -> None:
    sink = FlakySink()
    batcher: Batcher[RouteEvent] = Batcher(sink, "flaky")
    batcher.add([_event(1), _event(2)])
    assert batcher.flush() == 0 and batcher.pending() == 2
    batcher.add([_event(3)])
    sink.fail = False
    assert batcher.flush() == 3
    assert sink.batches == [[_event(1), _event(2), _event(3)]]
    assert batcher.flush() == 0 and batcher.written == 3


def test_batcher_bounds_its_memory_and_counts_drops() -> None:
    batcher: Batcher[RouteEvent] = Batcher(FlakySink(), "flaky", max_buffered=2)
    batcher.add([_event(1), _event(2), _event(3)])
    assert batcher.pending() == 2 and batcher.dropped == 1


def test_configured_sinks(tmp_path: Path) -> None:
    names = [b.name for b in route_event_batchers(str(tmp_path / "e.jsonl"), str(tmp_path / "c.duckdb"))]
    assert names == ["route-events-jsonl", "route-events-duckdb"]
    assert [b.name for b in route_event_batchers(str(tmp_path / "e.jsonl"), None)] == ["route-events-jsonl"]
