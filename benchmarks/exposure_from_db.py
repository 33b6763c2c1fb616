"""Exposure and false suspensions read from a database `bench_exposure.py --keep DIR` kept, up to its last complete
round: for a variant stopped before its `--days` (the live week does not fit a session on 2 cores).

    python benchmarks/exposure_from_db.py /tmp/bx/live/canary.duckdb [--days 7 --seed 13]

`--days`/`--seed`: the ones the benchmark ran with (they place the fault windows). A window counts when it ended
(+ the benchmark's grace) before the last complete round; its exposure runs from its start to the first `suspend`
decision of its endpoint inside it (+ grace). The benchmark itself reads the published ignore lists instead; on a
finished week both give the same figures (checked on the uptime variant: median 9.2 / p95 9.9, 18.1 / 33.2).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_exposure as bench  # noqa: E402
import duckdb  # noqa: E402

from demo.history import HISTORY_START  # noqa: E402


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--seed", type=int, default=13)
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


if __name__ == "__main__":
    main()
