"""benchmarks/bench_exposure.py's pure parts: a week run in parts and merged counts each window, round,
suspension and suspicion once (in the part whose day it starts in); the quality variant's request mix."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_exposure as bench  # noqa: E402

START = datetime(2026, 11, 2, tzinfo=UTC)


def _iso(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


def _part(day: int, published: list[tuple[datetime, list[str]]], suspends: list[tuple[str, datetime]],
          rounds: list[tuple[datetime, str, int]]) -> dict[str, Any]:
    span = bench.spans(START, 2, day)
    return {"variant": "quality", "span": [_iso(span.begin), _iso(span.until), _iso(span.counts_from)],
            "rpm": 12, "tick": 60, "seed": 13, "days": 2, "requests": 10, "wall_s": 1.0,
            "published": [(_iso(ts), ignore) for ts, ignore in published],
            "suspends": [(tag, _iso(at)) for tag, at in suspends],
            "rounds": [(_iso(ts), kind, n) for ts, kind, n in rounds],
            "suspicions": [(_iso(START + timedelta(days=day, hours=1)), "groq", "live_quality", "tools", "confirmed")]}


def test_a_part_starts_its_warm_up_early_and_counts_its_own_day_only() -> None:
    assert bench.spans(START, 7, None) == bench.Span(START, START + timedelta(days=7), START)
    assert bench.spans(START, 7, 0) == bench.Span(START, START + timedelta(days=1), START)  # no time before the start
    day3 = START + timedelta(days=3)
    assert bench.spans(START, 7, 3) == bench.Span(day3 - bench.WARMUP, day3 + timedelta(days=1), day3)
    with pytest.raises(SystemExit):
        bench.spans(START, 7, 7)


def test_merged_parts_count_each_window_round_and_suspension_once() -> None:
    h = timedelta(hours=1)
    windows = [("groq", START + 2 * h, START + 3 * h), ("groq", START + 25 * h, START + 26 * h)]
    day1 = START + timedelta(days=1)
    first = _part(0, [(START + 2 * h + timedelta(minutes=7), ["groq"])], [("groq", START + 2 * h)],
                  [(START, "full", 100), (START + 2 * h, "suspicion", 5)])
    # day 1's warm-up re-runs the end of day 0: its round at 23:30 and a suspension then are day 0's, not its own
    second = _part(1, [(day1 - h, ["groq"]), (day1 + timedelta(minutes=30), []),
                       (START + 25 * h + timedelta(minutes=9), ["groq"])],
                   [("groq", day1 - h), ("groq", START + 25 * h + timedelta(minutes=9))],
                   [(day1 - h, "full", 100), (day1, "full", 100), (day1 + h, "confirm", 7)])
    t = bench.tally([first, second], windows)
    assert t.minutes["judged"] == [7.0, 9.0] and t.missed["judged"] == 0
    assert t.probes == 100 + 5 + 100 + 7 and t.rounds == {"full": 2, "confirm": 1, "suspicion": 1}
    assert t.false == [] and t.suspicions == {"live_quality:tools confirmed": 2}
    assert t.days == 2.0 and t.requests == 20
    day0 = bench.tally([first, second], windows, within=[(START, day1)])  # another variant's days only
    assert day0.minutes["judged"] == [7.0] and day0.probes == 105 and day0.suspicions == {
        "live_quality:tools confirmed": 1}


def test_parts_of_one_variant_that_count_the_same_time_are_refused(tmp_path: Path) -> None:
    part = _part(1, [], [], [])
    for name in ("quality-day1.json", "again.json"):
        (tmp_path / name).write_text(json.dumps(part), encoding="utf-8")
    with pytest.raises(SystemExit, match="count the same time"):
        bench.read_parts([tmp_path])
    (tmp_path / "again.json").unlink()
    (tmp_path / "quality-day0.json").write_text(json.dumps(_part(0, [], [], [])), encoding="utf-8")
    parts = bench.read_parts([tmp_path])["quality"]
    assert [p["span"][2] for p in parts] == [_iso(START), _iso(START + timedelta(days=1))]


def test_the_quality_mix_is_a_third_each_half_of_each_streamed() -> None:
    mix = bench.tick_requests("mixed", 12)
    kinds = [("tools" in c.extra, "response_format" in c.extra) for c, _ in mix]
    assert kinds.count((False, False)) == 4 and kinds.count((True, False)) == 4 and kinds.count((False, True)) == 4
    assert sum(stream for _, stream in mix) == 6
    assert {c.name for c, stream in mix if stream} == {c.name for c, stream in mix if not stream}
    assert bench.tick_requests("plain", 3) == [(bench.CHAT, True)] * 3
