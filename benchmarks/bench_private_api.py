"""A catalog's burst of round starts on each Prefect server the canary may talk to, in one run.

    .venv/bin/python benchmarks/bench_private_api.py [--runs 200] [--parallel 64] [--modes sqlite,postgres,private]

What a cycle does to its Prefect server when many rounds start and end together, without the probes: one parent
flow run starting `--runs` subflow runs, `--parallel` at a time from threads (as flows/cycle.py runs its rounds),
each logging 15 lines, waiting 0.5 s and writing one artifact. Each mode runs in a fresh process against a fresh
server and database:

  sqlite            a stock `prefect server start` on SQLite (deploy/'s server before it moved to PostgreSQL:
                    Prefect's own DEFERRED transactions)
  postgres          a stock `prefect server start` on PostgreSQL (deploy/compose.yaml, the systemd unit): a
                    throwaway cluster (tests/support/postgres.py: initdb + pg_ctl; Debian's `postgresql` package)
  private           the private server `canary run` starts without PREFECT_API_URL (tasks/prefect_api/
                    private_server.py: SQLite, every transaction `BEGIN IMMEDIATE`, its idle services off)
  private-deferred  the same with Prefect's DEFERRED transactions (CANARY_PRIVATE_SQLITE_BEGIN=deferred): the
                    private server's baseline

Prints per mode: the wall, the runs that failed, the requests the server answered 503 (its own log,
PREFECT_API_LOG_RETRYABLE_ERRORS) and their statements, with the load average before and after; then a Markdown
table (docs/operations.md "Production") and one JSON line.

Measured (2026-12-04, 2 cores, quiet: load 0.9): 200 runs, 64 at once: private-deferred 127.5 s, 2 runs failed
after Prefect's client gave up retrying, 482 requests answered 503 ("database is locked" on INSERT INTO task_run
766 times, INSERT INTO flow_run 198); private 23.4 s (0.18x), 0 failed, 0 answered 503. The three servers in one
run (2026-12-06, shared machine, load 11-15): sqlite 189.9 s, 34 runs failed, 650 answered 503; postgres 81.7 s,
0, 0; private 29.6 s, 0, 0 (docs/operations.md "Production", "Prefect's database").
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("sqlite", "postgres", "private", "private-deferred")
DEFAULT_MODES = ("sqlite", "postgres", "private")
BIN = Path(sys.executable).parent
QUIET = {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING",
         "PREFECT_API_LOG_RETRYABLE_ERRORS": "true"}


def child(runs: int, parallel: int, private: bool) -> dict[str, object]:
    sys.path.insert(0, str(ROOT))
    from tasks.prefect_api.server import prefect_api

    with prefect_api(private=private) as api:
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
        log = api.server.log_path.read_text(errors="replace") if api.server is not None else ""
    return {"wall_s": wall, "failed_runs": failed[0], **({"server_log": log} if log else {})}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def stock_server(mode: str, tmp: Path) -> Iterator[tuple[str, Path]]:
    """A `prefect server start` on SQLite (a fresh PREFECT_HOME) or on a fresh PostgreSQL cluster: (API, its log)."""
    sys.path.insert(0, str(ROOT))
    from tests.support.postgres import postgres_cluster
    from tests.support.processes import stop_group

    with contextlib.ExitStack() as stack:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(QUIET, PREFECT_HOME=str(tmp / "server-home"))
        if mode == "postgres":
            pg = stack.enter_context(postgres_cluster())
            pg.create_database("prefect")
            env["PREFECT_API_DATABASE_CONNECTION_URL"] = pg.url("prefect")
        port = _free_port()
        log = tmp / "server.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
                                     str(port)], env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        stack.callback(stop_group, proc)  # SIGINT to its group, SIGKILL after 15 s
        api = f"http://127.0.0.1:{port}/api"
        _wait_healthy(api, proc, log)
        yield api, log


def _wait_healthy(api: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 240) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"prefect server start exited ({proc.returncode}): {log.read_text(errors='replace')[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{api}/health", timeout=3).status_code == 200:
                return
        time.sleep(0.5)
    sys.exit(f"prefect server start did not answer within {timeout_s:.0f} s")


def run_mode(mode: str, runs: int, parallel: int) -> dict[str, object]:
    env = {**{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}, **QUIET}
    argv = [sys.executable, __file__, "--child", mode, "--runs", str(runs), "--parallel", str(parallel)]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix=f"bench-api-{mode}-") as tmp:
        if mode.startswith("private"):
            env["CANARY_PRIVATE_SQLITE_BEGIN"] = "deferred" if mode == "private-deferred" else "immediate"
            out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            server_log = None
        else:
            with stock_server(mode, Path(tmp)) as (api, log_path):
                out = subprocess.run(argv, env={**env, "PREFECT_API_URL": api}, capture_output=True, text=True,
                                     check=False)
                server_log = log_path.read_text(errors="replace")
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        sys.exit(f"{mode}: no result (exit {out.returncode}): {out.stderr[-2000:]}")
    result = json.loads(lines[-1])
    log = server_log if server_log is not None else result.pop("server_log", "")
    statements: dict[str, int] = {}
    for line in log.splitlines():
        if line.startswith("[SQL: "):
            key = " ".join(line[6:].split()[:3])
            statements[key] = statements.get(key, 0) + 1
    result.update(answered_503=log.count("Encountered retryable exception"), locked_statements=statements,
                  load_before=load_before, load_after=os.getloadavg()[0])
    return dict(result)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--parallel", type=int, default=64)
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.runs, args.parallel, private=args.child.startswith("private"))))
        return
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := set(modes) - set(MODES):
        sys.exit(f"unknown modes: {', '.join(sorted(unknown))} (known: {', '.join(MODES)})")
    print(f"{args.runs} subflow runs, {args.parallel} at once; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    results = {}
    for mode in modes:
        r = results[mode] = run_mode(mode, args.runs, args.parallel)
        print(f"  {mode:16} wall {r['wall_s']:6.1f} s, runs failed {r['failed_runs']}, requests answered 503 "
              f"{r['answered_503']}, load {r['load_before']:.1f} -> {r['load_after']:.1f}, "
              f"locked statements {r['locked_statements'] or 'none'}", flush=True)
    print("\n| server | wall | runs failed | requests answered 503 | load before -> after |")
    print("| --- | --- | --- | --- | --- |")
    for mode, r in results.items():
        print(f"| {mode} | {r['wall_s']:.1f} s | {r['failed_runs']} | {r['answered_503']} | "
              f"{r['load_before']:.1f} -> {r['load_after']:.1f} |")
    print(json.dumps({"runs": args.runs, "parallel": args.parallel, "results": results}))


if __name__ == "__main__":
    main()
