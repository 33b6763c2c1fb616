"""`canary run` end to end with a configured Prefect API, beside its slowest probe chain (issue 12's target:
wall <= that chain + 5 s).

    .venv/bin/python benchmarks/bench_run_api.py [--runs 4]      # ~2.5 min

Starts a `prefect server start` on loopback (its own PREFECT_HOME) and the simulator's default fleet at its real
delays (`canary simulator`, the 12 s slow start included), points PREFECT_API_URL at the server, and times
`canary run --config C --db D` as a subprocess, `--runs` times (the first also creates the flows and slots). The
baseline of each run, measured in the same run, is its slowest single probe chain (one endpoint and contract,
its attempts' total_ms summed), read from the run's own DuckDB file. Prints per run: wall, chain, wall - chain,
wall / chain, and where the rest goes: from the command's start to its first probe, and from its last probe's end
to its exit.

Measured (2026-12-01, 2 cores, idle): wall 28.9-29.0 s after the first run (29.5 s), chain 24.5 s, wall - chain
4.3-4.5 s (4.9 s for the first); before this session's changes (detector built while the requests are out,
language verdicts remembered, quoted task arguments): 31.6-32.4 s, wall - chain 7.1-7.9 s. On a slower host
(2026-12-02; the same code gave 6.1-6.8 s there): wall 30.4-30.8 s after the first run, wall - chain 5.9-6.7 s, of
which 2.9-3.3 s to the first probe (imports, the API's flow and slot calls, load-prior, discover) and 2.3-2.9 s
after the last (settle to deliver ~0.6 s, then ~1.7 s between the round's last log line and its cycle flow run
reported Completed: the engine joining each flow run's heartbeat thread, which sleeps in 1 s steps; and the
exit). With `canary run`'s flow runs sending no heartbeats: wall 28.0-28.5 s, wall - chain 3.5-4.1 s (to the
first probe 2.5-2.8 s, after the last 0.9-1.0 s).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
MODEL = "meta-llama/llama-3.3-70b-instruct"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, what: str, proc: subprocess.Popen[bytes], timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited ({proc.returncode})")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{what} not ready after {timeout_s:.0f} s")


def slowest_chain_s(db: Path) -> float:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT max(s) FROM (SELECT sum(total_ms) AS s FROM attempts WHERE round_id = "
            "(SELECT max(round_id) FROM attempts) GROUP BY tag, contract)"
        ).fetchone()
    return float(row[0]) / 1000 if row and row[0] is not None else float("nan")


def probe_span(db: Path) -> tuple[float, float]:
    """(first attempt's start, last attempt's end) of the newest round, Unix seconds."""
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT epoch(min(started_at)), epoch(max(started_at + to_milliseconds(CAST(total_ms AS BIGINT))))"
            " FROM attempts WHERE round_id = (SELECT max(round_id) FROM attempts)"
        ).fetchone()
    return (float(row[0]), float(row[1])) if row and row[0] is not None else (float("nan"), float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-run-api-") as tmp_s:
        tmp = Path(tmp_s)
        base = {**os.environ, "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_LOGGING_LEVEL": "WARNING"}
        base.pop("PREFECT_API_URL", None)
        api_port, sim_port = _free_port(), _free_port()
        server = subprocess.Popen(
            [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(api_port)],
            env={**base, "PREFECT_HOME": str(tmp / "server")}, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        sim = subprocess.Popen([str(BIN / "canary"), "simulator", "--port", str(sim_port)], env=base,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            api = f"http://127.0.0.1:{api_port}/api"
            sim_url = f"http://127.0.0.1:{sim_port}/api/v1"
            _wait(f"{api}/health", "prefect server", server)
            _wait(f"{sim_url}/models", "simulator", sim)
            db = tmp / "run.duckdb"
            cfg = tmp / "canary.toml"
            (tmp / "none.toml").write_text("", encoding="utf-8")  # no built-in exclusions (missing: an error)
            cfg.write_text(f'models = ["{MODEL}"]\nbase_url = "{sim_url}"\ndb_path = "{db}"\n'
                           f'publish_dir = "{tmp / "published"}"\nexclusions_file = "{tmp / "none.toml"}"\n')
            env = {**base, "PREFECT_API_URL": api, "PREFECT_HOME": str(tmp / "client"),
                   "OPENROUTER_API_KEY": "sk-or-v1-simulator"}
            print(f"{'run':>3} {'wall s':>7} {'chain s':>7} {'wall-chain s':>12} {'wall/chain':>10}"
                  f" {'to 1st probe s':>14} {'after probes s':>14}")
            for n in range(1, args.runs + 1):
                t0, started = time.monotonic(), time.time()
                done = subprocess.run([str(BIN / "canary"), "run", "--config", str(cfg)], env=env,
                                      capture_output=True, text=True, timeout=300)
                wall, ended = time.monotonic() - t0, time.time()
                if done.returncode != 0:
                    out = done.stdout[-2000:] + done.stderr[-2000:]
                    raise SystemExit(f"canary run exited {done.returncode}:\n{out}")
                chain = slowest_chain_s(db)
                first, last = probe_span(db)
                note = "  (first: creates flows and slots)" if n == 1 else ""
                print(f"{n:>3} {wall:>7.2f} {chain:>7.2f} {wall - chain:>12.2f} {wall / chain:>10.2f}"
                      f" {first - started:>14.2f} {ended - last:>14.2f}{note}")
        finally:
            for proc in (sim, server):
                os.killpg(proc.pid, 15)
                proc.wait(timeout=20)


if __name__ == "__main__":
    main()
