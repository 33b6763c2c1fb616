"""Exposure and false suspensions read from a database `bench_exposure.py --keep DIR` kept, up to its last complete
round: for a variant stopped before its `--days` (the live week does not fit a session on 2 cores).

    python benchmarks/exposure_from_db.py /tmp/bx/live/canary.duckdb [--days 7 --seed 13]

`--days`/`--seed`: the ones the benchmark ran with (they place the fault windows). A window counts when it ended
(+ the benchmark's grace) before the last complete round; its exposure runs from its start to the first `suspend`
decision of its endpoint inside it (+ grace). The benchmark itself reads the published ignore lists instead; on a
finished week both give the same figures (checked on the uptime variant: median 9.2 / p95 9.9, 18.1 / 33.2).

`--peer-rule` (a database with the quality variant's judged answers) replays the quality rule at every minute
over the kept counts, once as configured and once without the peer margin (the failure rate alone), and prints how
many suspicions each would have raised on endpoints with no fault at that minute: the clients' own schema bugs the
peer rule keeps from costing rounds. The replay keeps the rule's cooldown and its cleared-rate memory (every such
suspicion cleared by the probes at its rate) and leaves out the rest of the watcher (no other signal, no state).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_exposure as bench  # noqa: E402
import duckdb  # noqa: E402

from provider_canary.demo.history import HISTORY_START  # noqa: E402
from provider_canary.demo.settings import DEMO_MODEL  # noqa: E402


def exposure(windows: list[tuple[str, datetime, datetime]], suspends: list[tuple[str, datetime]]
             ) -> tuple[dict[str, float], int]:
    minutes, missed = [], 0
    for tag, begin, end in windows:
        hit = next((at for t, at in suspends if t == tag and begin <= at <= end + bench.GRACE), None)
        if hit is None:
            missed += 1
        else:
            minutes.append((hit - begin).total_seconds() / 60)
    return bench.describe(minutes), missed


def replay_quality_rule(counts: list[Any], tags: list[str], windows: list[tuple[str, datetime, datetime]],
                        margin: float) -> list[tuple[datetime, str, str]]:
    """(minute, tag, class) of every quality suspicion the rule (the defaults, `margin` as the peer margin) raises,
    looking once a minute, on a tag with no fault window at that minute."""
    from tasks.core.live_tally import quality_tally
    from tasks.core.suspicion import ClearedRate, SuspicionRules, quality_suspicion
    from tasks.core.types import Endpoint

    rules = SuspicionRules(300, 20, 0.5, 20.0, 900, margin)
    endpoints = [Endpoint(DEMO_MODEL, t, t.split("/")[0].title()) for t in tags]
    minutes = sorted({c.minute_at for c in counts})
    last: dict[str, datetime] = {}
    cleared: dict[tuple[str, Any], ClearedRate] = {}
    found: list[tuple[datetime, str, str]] = []
    start = 0
    for now in minutes:
        window_start = now - timedelta(seconds=rules.window_s)
        while counts[start].minute_at < window_start:
            start += 1
        recent = [c for c in counts[start:] if c.minute_at <= now]
        since = {t: max(window_start, last.get(t, window_start)) for t in tags}
        for (tag, quality), tally in quality_tally(recent, endpoints, since=since, window_start=window_start,
                                                   until=now + timedelta(minutes=1)).items():
            if tag in last and (now - last[tag]).total_seconds() < rules.cooldown_s:
                continue
            if any(t == tag and b <= now <= e for t, b, e in windows):
                continue  # a real fault: not what this counts
            hit = quality_suspicion(DEMO_MODEL, tally, cleared.get((tag, quality)), rules, now)
            if hit is not None:
                found.append((now, tag, str(quality)))
                last[tag] = now
                cleared[(tag, quality)] = ClearedRate(now, tally.rate)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--peer-rule", action="store_true", help="replay the quality rule with and without the peers")
    args = ap.parse_args()
    con = duckdb.connect(args.db, read_only=True)
    con.execute("SET TimeZone = 'UTC'")
    [(last,)] = con.execute("SELECT max(round_ts) FROM rounds WHERE status = 'complete'").fetchall()
    [(attempts,)] = con.execute("SELECT count(*) FROM attempts").fetchall()
    suspends = con.execute("SELECT tag, decided_at FROM decisions WHERE action = 'suspend' ORDER BY decided_at"
                           ).fetchall()
    all_windows = bench.fault_windows(HISTORY_START, args.days, args.seed)
    windows = [w for w in all_windows if w[2] + bench.GRACE <= last]
    days = (last - HISTORY_START).total_seconds() / 86400
    print(f"{args.db}: {days:.2f} simulated days (to {last:%m-%d %H:%M}), {attempts} probe requests")
    for _, label, tags in bench.FAULT_CLASSES:
        print(f"  {label + ':':<40}", exposure([w for w in windows if w[0] in tags], suspends))
    false = bench.false_suspensions(suspends, all_windows)
    print(f"  false suspensions: {len(false)}", *(f"{t} at {at:%m-%d %H:%M}" for t, at in false))
    if args.peer_rule:
        from tasks.store.live import live_counts

        counts = [c for c in live_counts(con, DEMO_MODEL, HISTORY_START) if c.quality is not None]
        listed = [*bench.HEALTHY, bench.CONTROL, *bench.FAULTY]
        for margin, label in ((0.3, "as configured (peer margin 0.3)"), (0.0, "without the peer rule")):
            hits = replay_quality_rule(counts, listed, all_windows, margin)
            per = {q: sum(1 for *_, k in hits if k == q) for q in ("tools", "structured", "empty", "encoding")}
            print(f"  quality suspicions of endpoints without a fault, {label}: {len(hits)} {per}")


if __name__ == "__main__":
    main()
