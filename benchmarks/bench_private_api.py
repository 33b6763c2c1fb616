"""The private Prefect server under a catalog's burst of runs: Prefect's own SQLite transactions beside ours.

    .venv/bin/python benchmarks/bench_private_api.py [--runs 200] [--parallel 64]     # ~3 min

What a cycle does to its private server when many rounds start and end together, without the probes: one parent
flow run starting `--runs` subflow runs, `--parallel` at a time from threads (as flows/cycle.py runs its rounds),
each logging 15 lines, waiting 0.5 s and writing one artifact. Run twice, each in a fresh process with a fresh
private server (tasks/prefect_api/private_server.py): with `CANARY_PRIVATE_SQLITE_BEGIN=deferred` (Prefect's own
transactions: the baseline) and with the default (every transaction `BEGIN IMMEDIATE`,
tasks/prefect_api/server_child.py `serialize_sqlite_transactions`). Prints per mode: the wall, the runs that
failed, the requests the server answered 503 (its own log, PREFECT_API_LOG_RETRYABLE_ERRORS) and their
statements; then the ratios.

Measured (2026-12-04, 2 cores, quiet: load 0.9): 200 runs, 64 at once: deferred 127.5 s, 2 runs failed after
Prefect's client gave up retrying, 482 requests answered 503 ("database is locked" on INSERT INTO task_run 766
times, INSERT INTO flow_run 198); immediate 23.4 s (0.18x), 0 failed, 0 answered 503. The same at load ~4:
147.8 s, 8 failed, 498 answered 503; 25.7 s, 0, 0.
"""

from __future__ import annotations

import argparse
import contextvars
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("deferred", "immediate")


def child(runs: int, parallel: int) -> dict[str, object]:
    sys.path.insert(0, str(ROOT))
    from tasks.prefect_api.server import prefect_api

    with prefect_api(private=True) as api:
        api.wait_ready()
        from prefect import flow, get_run_logger
        from prefect.artifacts import create_markdown_artifact

        @flow(name="bench-round")
        def one_round(i: int) -> int:
            log = get_run_logger()
            for k in range(15):
                log.info("endpoint line %d of round %d", k, i)
            time.sleep(0.5)
            create_markdown_artifact("x" * 200, key=f"bench-round-{i % 10}")
            return i

        failed = [0]

        @flow(name="bench-cycle")
        def cycle() -> None:
            with ThreadPoolExecutor(parallel) as pool:
                futures = [pool.submit(contextvars.copy_context().run, one_round, i) for i in range(runs)]
                for future in futures:
                    try:
                        future.result()
                    except Exception:
                        failed[0] += 1

        t0 = time.monotonic()
        try:
            cycle()
        except Exception:  # the cycle's own run creation can fail too: counted, not fatal
            failed[0] += 1
        wall = time.monotonic() - t0
        assert api.server is not None
        log = api.server.log_path.read_text(errors="replace")
    statements: dict[str, int] = {}
    for line in log.splitlines():
        if line.startswith("[SQL: "):
            key = " ".join(line[6:].split()[:3])
            statements[key] = statements.get(key, 0) + 1
    return {"wall_s": wall, "failed_runs": failed[0], "answered_503": log.count("Encountered retryable exception"),
            "locked_statements": statements}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--parallel", type=int, default=64)
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.runs, args.parallel)))
        return
    print(f"{args.runs} subflow runs, {args.parallel} at once, private server; load {os.getloadavg()[0]:.1f}")
    results = {}
    for mode in MODES:
        env = {**os.environ, "CANARY_PRIVATE_SQLITE_BEGIN": mode, "PREFECT_API_LOG_RETRYABLE_ERRORS": "true",
               "PREFECT_LOGGING_LEVEL": "WARNING"}
        out = subprocess.run([sys.executable, __file__, "--child", mode, "--runs", str(args.runs),
                              "--parallel", str(args.parallel)], env=env, capture_output=True, text=True,
                             check=False)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            sys.exit(f"{mode}: no result (exit {out.returncode}): {out.stderr[-2000:]}")
        results[mode] = json.loads(lines[-1])
        r = results[mode]
        print(f"  {mode:9} wall {r['wall_s']:6.1f} s, runs failed {r['failed_runs']}, requests answered 503 "
              f"{r['answered_503']}, locked statements {r['locked_statements'] or 'none'}")
    base, ours = results["deferred"], results["immediate"]
    print(f"  ratio (immediate / deferred): wall {ours['wall_s'] / base['wall_s']:.2f}x")
    print(json.dumps({"runs": args.runs, "parallel": args.parallel, "results": results}))


if __name__ == "__main__":
    main()
