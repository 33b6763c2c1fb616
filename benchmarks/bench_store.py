"""Store benchmarks, each against a baseline measured in the same run.

    python benchmarks/bench_store.py [--rows 1500000] [--repeat 5]

1. Landing one round of 60 attempts in a full write window (lock, migration check, delete+insert in one
   transaction, complete, CHECKPOINT, snapshot publish) vs a naive row-at-a-time executemany insert.
2. The same window once the file holds ``--rows`` attempts: the snapshot copy grows with the file.
3. A per-endpoint per-round TTFT median/p95 over ``--rows`` attempts in DuckDB (v_attempts) vs pandas.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

from tasks import store  # noqa: E402
from tasks.core.contracts import probed  # noqa: E402
from tasks.core.types import Attempt, Mode, RoundInfo, Usage  # noqa: E402
from tasks.store.records import attempt_row  # noqa: E402

T0 = datetime(2026, 11, 1, tzinfo=UTC)
MODEL = "meta-llama/llama-3.3-70b-instruct"
TAGS = [f"provider{i}" for i in range(15)]


def round_attempts(n: int) -> tuple[RoundInfo, list[Attempt]]:
    info = RoundInfo(f"bench-{n}", MODEL, T0 + timedelta(minutes=30 * n), Mode.OBSERVE)
    attempts = [
        Attempt(info.round_id, MODEL, tag, tag.title(), contract, 1, info.round_ts, language="en",
                http_status=200, ttft_ms=100.0 + i, total_ms=900.0, chunk_count=40, keepalive_count=1,
                finish_reason="stop", served_provider=tag.title(), usage=Usage(50, 120, 170, 0.0002),
                text="*smiles* " + "a plausible roleplay continuation " * 12)
        for i, tag in enumerate(TAGS)
        for contract in probed()
    ]
    return info, attempts  # 15 endpoints x 4 contracts = 60 attempts


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls, seconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def land_window(db: Path, n: int) -> None:
    info, attempts = round_attempts(n)
    with store.open_store(db) as con:
        store.land_round(con, info, attempts, endpoints=TAGS)
        store.complete_round(con, info.round_id, at=info.round_ts)


def naive_insert(db: Path, n: int) -> None:
    """Baseline: one connection, DELETE + executemany of plain tuples, no checkpoint, no snapshot."""
    info, attempts = round_attempts(n)
    rows = [attempt_row(a) for a in attempts]
    cols = list(rows[0])
    con = duckdb.connect(str(db))
    try:
        con.execute("DELETE FROM attempts WHERE round_id = ?", [info.round_id])
        con.executemany(
            f"INSERT INTO attempts ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            [[r[c] for c in cols] for r in rows],
        )
    finally:
        con.close()


def fill_history(db: Path, rows: int) -> None:
    """``rows`` attempts over rows/60 complete rounds, generated inside DuckDB."""
    rounds = rows // 60
    with store.open_store(db, snapshot=False) as con:
        con.execute(
            "INSERT INTO rounds SELECT 'h' || r, ?, ?::TIMESTAMPTZ + to_minutes(30 * r), 'observe',"
            " 'complete', ?::TIMESTAMPTZ + to_minutes(30 * r), NULL, [], 15, 60, 60, NULL FROM range(?) t(r)",
            [MODEL, T0 - timedelta(days=3650), T0 - timedelta(days=3650), rounds],
        )
        con.execute(
            "INSERT INTO attempts (attempt_id, round_id, model, tag, provider_name, contract, attempt_no,"
            " language, started_at, http_status, ttft_ms, total_ms, chunk_count, keepalive_count,"
            " pin_mismatch, text, text_truncated, reasoning)"
            " SELECT 'h' || (i // 60) || ':p' || (i % 15) || ':' || (i % 4), 'h' || (i // 60), ?,"
            " 'provider' || (i % 15), 'P', ['ttft','refusal','structured','language'][1 + (i % 60) // 15], 1,"
            " 'en', ?::TIMESTAMPTZ + to_minutes(30 * (i // 60)), 200, 50 + random() * 3000, 900, 40, 1,"
            " false, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) || md5((i + 2)::VARCHAR), false, ''"
            " FROM range(?) t(i)",
            [MODEL, T0 - timedelta(days=3650), rounds * 60],
        )


AGG_TABLE_SQL = """
SELECT a.round_id, a.tag, median(a.ttft_ms) AS p50_ms, quantile_cont(a.ttft_ms, 0.95) AS p95_ms, count(*) AS n
FROM attempts a JOIN rounds r USING (round_id) WHERE r.status = 'complete' GROUP BY a.round_id, a.tag
"""

AGG_SQL = """
SELECT round_id, tag, median(ttft_ms) AS p50_ms, quantile_cont(ttft_ms, 0.95) AS p95_ms, count(*) AS n
FROM v_attempts WHERE round_state = 'complete' GROUP BY round_id, tag
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_500_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small, naive, big = Path(tmp, "small.duckdb"), Path(tmp, "naive.duckdb"), Path(tmp, "big.duckdb")
        for db in (small, naive, big):
            with store.open_store(db, snapshot=False):
                pass
        counter = iter(range(10**6))
        window_s = timed(lambda: land_window(small, next(counter)), args.repeat)
        naive_s = timed(lambda: naive_insert(naive, next(counter)), args.repeat)
        print(f"land 60 attempts, full window (small file)   {window_s * 1000:8.1f} ms")
        print(f"  baseline: executemany row by row, no window  {naive_s * 1000:8.1f} ms")

        started = time.perf_counter()
        fill_history(big, args.rows)
        print(f"generate {args.rows:,} attempts                  {time.perf_counter() - started:8.2f} s"
              f"   (file {big.stat().st_size / 1e6:.0f} MB)")
        big_s = timed(lambda: land_window(big, next(counter)), args.repeat)
        quiet_s = timed(lambda: land_window_no_snapshot(big, next(counter)), args.repeat)
        print(f"land 60 attempts, window ({args.rows:,} rows)      {big_s * 1000:8.1f} ms  with snapshot")
        print(f"  same window with snapshot=False              {quiet_s * 1000:8.1f} ms")

        con = store.open_snapshot(big)
        try:
            view_s = timed(lambda: con.execute(AGG_SQL).fetchall(), args.repeat)
            table_s = timed(lambda: con.execute(AGG_TABLE_SQL).fetchall(), args.repeat)
            started = time.perf_counter()
            frame = con.execute(
                "SELECT a.round_id, a.tag, a.ttft_ms FROM attempts a JOIN rounds r USING (round_id)"
                " WHERE r.status = 'complete'"
            ).df()
            load_s = time.perf_counter() - started
        finally:
            con.close()

        def pandas_agg() -> object:  # vectorised: no Python per group
            grouped = frame.groupby(["round_id", "tag"], sort=False)["ttft_ms"]
            return (grouped.median(), grouped.quantile(0.95), grouped.count())

        pandas_s = timed(pandas_agg, max(1, args.repeat // 2))
        print(f"p50/p95 TTFT per round x endpoint over {len(frame):,} attempts:")
        print(f"  DuckDB on v_attempts (joins rounds+outcomes) {view_s * 1000:8.1f} ms")
        print(f"  DuckDB on attempts JOIN rounds               {table_s * 1000:8.1f} ms")
        print(f"  baseline: pandas groupby, frame in memory    {pandas_s * 1000:8.1f} ms"
              f"  (+ {load_s * 1000:.0f} ms to load the frame)")


def land_window_no_snapshot(db: Path, n: int) -> None:
    info, attempts = round_attempts(n)
    with store.open_store(db, snapshot=False) as con:
        store.land_round(con, info, attempts, endpoints=TAGS)
        store.complete_round(con, info.round_id, at=info.round_ts)


if __name__ == "__main__":
    main()
