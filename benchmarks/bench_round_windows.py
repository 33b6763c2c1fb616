"""How long one round holds the DuckDB file, and how its wall time compares with its slowest probe chain.

    .venv/bin/python benchmarks/bench_round_windows.py [--rounds 4] [--time-scale 0.1]
    .venv/bin/python benchmarks/bench_round_windows.py --rounds 3 --defaults   # issue 12's single-model target:
                                         # real delays (12 s slow start), real thresholds and budgets (~1.5 min)

Runs real `canary-round` flow runs (a private Prefect test server in this process) against the simulator's
default fleet, then prints, per round and overall: the longest write window (the time another process is
locked out), the sum of the round's windows, the round's wall time, and its slowest probe chain (per endpoint
and contract, the sum of its attempts' total_ms, i.e. the language confirmations one after another). The
baseline measured in the same run is the bare probe phase (first request start to last request end), so
`wall / chain` and `wall / probe phase` show what the shell adds around the probes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--time-scale", type=float, default=0.1)
    ap.add_argument("--defaults", action="store_true",
                    help="the default fleet at its real delays (time scale 1) with the config's default TTFT "
                         "threshold, timeouts and probe budget, instead of scaled ones")
    args = ap.parse_args()

    from prefect.testing.utilities import prefect_test_harness

    from flows.round import canary_round
    from provider_canary.simulator.server import start_simulator
    from tasks import store
    from tasks.store.connection import HELD_S

    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp, prefect_test_harness(server_startup_timeout=90), \
            start_simulator(None, time_scale=1.0 if args.defaults else args.time_scale) as sim:
        os.environ["OPENROUTER_API_KEY"] = sim.api_key
        db = str(Path(tmp) / "bench.duckdb")
        (Path(tmp) / "none.toml").write_text("", encoding="utf-8")  # no built-in exclusions (missing: an error)
        ov = {"base_url": sim.base_url, "db_path": db, "publish_dir": str(Path(tmp) / "pub"),
              "exclusions_file": str(Path(tmp) / "none.toml"), "mode": "enforce"}
        if not args.defaults:
            ov |= {"ttft_s": 1.0, "read_timeout_s": 5.0, "probe_budget_s": 8.0}
        rows = []
        for n in range(args.rounds):
            HELD_S.clear()
            start = time.monotonic()
            summary = canary_round(round_ts=t0 + timedelta(minutes=30 * n), overrides=ov)
            wall = time.monotonic() - start
            held = [s for key, ro, s in HELD_S if not ro]
            with store.open_store(db, read_only=True) as con:
                chain_ms, phase_s = con.execute(
                    "SELECT (SELECT max(s) FROM (SELECT sum(total_ms) AS s FROM attempts WHERE round_id = $r"
                    " GROUP BY tag, contract)), (SELECT epoch(max(started_at + to_milliseconds(total_ms::BIGINT))"
                    " - min(started_at)) FROM attempts WHERE round_id = $r)", {"r": summary["round_id"]},
                ).fetchone()
            rows.append((n + 1, max(held), sum(held), len(held), wall, chain_ms / 1000, phase_s))
    print(f"{'round':>5} {'max window s':>12} {'sum windows s':>13} {'windows':>7} {'wall s':>7} "
          f"{'chain s':>7} {'probe phase s':>13} {'wall/chain':>10} {'wall/phase':>10}")
    for n, mx, total, count, wall, chain, phase in rows:
        print(f"{n:>5} {mx:>12.3f} {total:>13.3f} {count:>7} {wall:>7.2f} {chain:>7.2f} {phase:>13.2f} "
              f"{wall / chain:>10.2f} {wall / phase:>10.2f}")
    later = rows[1:] or rows
    print(f"max write window over all rounds: {max(r[1] for r in rows):.3f} s; "
          f"median wall/chain after the first round: {statistics.median(r[4] / r[5] for r in later):.2f}")


if __name__ == "__main__":
    main()
