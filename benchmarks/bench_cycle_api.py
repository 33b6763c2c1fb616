"""Prefect API calls per cycle: what a shard costs the Prefect server (docs/operations.md 2c).

    .venv/bin/python benchmarks/bench_cycle_api.py [--models 1,4] [--endpoints 5]

Starts a private `prefect server start` with its access log on (PREFECT_SERVER_LOGGING_LEVEL=INFO) and the
simulator, then per model count runs `canary run` twice (the first creates the flows and slots) and counts
the HTTP requests the server logged during the second, by path. Nothing else talks to that server, so every
line is the cycle's. State events go over a websocket and are not counted.

Measured (2026-12-01, 2 shared cores): 47 calls with 1 model, 120-127 with 4 (5 endpoints each; the
lease renewals grow with the run's wall time).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"


def _path(access_line: str) -> str:
    """`"GET /api/flow_runs/<uuid>?x HTTP/1.1"` -> `GET /api/flow_runs/{id}`."""
    request = access_line.split('"')[1].split("?")[0].split(" HTTP")[0]
    return re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "{id}", request)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="1,4")
    ap.add_argument("--endpoints", type=int, default=5)
    args = ap.parse_args()
    counts = [int(n) for n in args.models.split(",")]

    from provider_canary.simulator.fleet import parse_fleet
    from provider_canary.simulator.server import start_simulator

    models = [f"acme/api-{i}" for i in range(max(counts))]
    tags = [f"ep{i}" for i in range(args.endpoints)]
    fleet = parse_fleet({"models": [{"id": m, "endpoints": [{"tag": t, "provider_name": t} for t in tags]}
                                    for m in models]})
    tmp = Path(tempfile.mkdtemp(prefix="bench-cycle-api-"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_HOME=str(tmp / "server"),
               PREFECT_SERVER_LOGGING_LEVEL="INFO")
    log = tmp / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
                                   str(port)], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(api + "/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        with start_simulator(fleet) as sim:
            run_env = {**env, "PREFECT_HOME": str(tmp / "client"), "PREFECT_API_URL": api,
                       "OPENROUTER_API_KEY": sim.api_key}
            (tmp / "none.toml").write_text("", encoding="utf-8")  # no built-in exclusions (a missing file is an error)
            for n in counts:
                cfg = tmp / f"canary-{n}.toml"
                names = ", ".join(f'"{m}"' for m in models[:n])
                cfg.write_text(f'models = [{names}]\nmode = "enforce"\nbase_url = "{sim.base_url}"\n'
                               f'db_path = "{tmp / f"db-{n}.duckdb"}"\nexclusions_file = "{tmp / "none.toml"}"\n'
                               'languages = ["en"]\n', encoding="utf-8")
                for attempt in (1, 2):
                    before = len(log.read_text().splitlines())
                    t0 = time.monotonic()
                    done = subprocess.run([str(BIN / "canary"), "run", "--config", str(cfg)], env=run_env,
                                          cwd=REPO, capture_output=True, text=True)
                    wall = time.monotonic() - t0
                    time.sleep(3)  # the last log lines of the run
                    lines = [ln for ln in log.read_text().splitlines()[before:] if "uvicorn.access" in ln]
                    if attempt == 2:
                        paths = collections.Counter(_path(ln) for ln in lines)
                        print(f"{n} model(s): {len(lines)} API calls, `canary run` exit {done.returncode}, "
                              f"{wall:.1f} s")
                        for path, c in paths.most_common():
                            print(f"  {c:4d} {path}")
    finally:
        os.killpg(server.pid, 15)
        server.wait(20)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
