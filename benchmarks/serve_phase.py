"""`canary serve` as a phase of benchmarks/bench_catalog.py (`--serve`): serve's own start-up cycle (a fresh database
has no round yet, so it runs one at once; `CANARY_SERVE_INTERVAL_S` keeps the schedule's next one a day away) is the
cycle measured, against a `prefect server start` of the phase's own (a served deployment leaves scheduled
confirmation runs behind, which the next tree's serve of the same deployment would run first). The phase ends when
the Prefect API says that cycle's flow run is final: then serve gets Ctrl-C, as an operator stops it, and its whole
process tree (serve, the runner's flow-run process, the probe worker) has been sampled like a `canary run`'s."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

SERVE_ENV = {"CANARY_SERVE_INTERVAL_S": "86400", "PREFECT_RUNNER_POLL_FREQUENCY": "2"}
FINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


def first_cycle_run_since(api_url: str, since: datetime) -> dict[str, Any] | None:
    """The earliest `canary-cycle` flow run expected at or after `since`: serve's start-up cycle (the confirmation
    runs its watch asks for come later, and may be many)."""
    body = {"flows": {"name": {"any_": ["canary-cycle"]}},
            "flow_runs": {"expected_start_time": {"after_": since.isoformat()}},
            "sort": "EXPECTED_START_TIME_ASC", "limit": 1}
    response = httpx.post(f"{api_url.rstrip('/')}/flow_runs/filter", json=body, timeout=10)
    response.raise_for_status()
    runs = response.json()
    return runs[0] if runs else None


def until_served_cycle_ends(api_url: str) -> Callable[[subprocess.Popen[Any], float], None]:
    """A `run_measured` ending: poll the API until serve's first cycle run is final (or serve exits, or
    `timeout_s`), then Ctrl-C to serve's process group."""
    since = datetime.now(UTC)

    def wait(proc: subprocess.Popen[Any], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                run = first_cycle_run_since(api_url, since)
                if run is not None and run["state_type"] in FINAL:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)

    return wait
