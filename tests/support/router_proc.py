"""`canary router` as its own process, as deployed: started on a free port, waited for until /healthz answers,
stopped gracefully (SIGINT to its process group, so its lifespan's last flush runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.ports import free_port as free_port  # the tests import it from here too

ROOT = Path(__file__).resolve().parents[2]
RUN = "import typer; from provider_canary.cli.router_cmd import router_command; typer.run(router_command)"


@contextmanager
def router_process(routes: Path, log: Path, cwd: Path = ROOT, env: Mapping[str, str] | None = None,
                   stop_timeout_s: float = 60.0) -> Iterator[str]:
    """The router's base URL (`http://127.0.0.1:<port>`); its output goes to `log` (appended)."""
    port = free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-c", RUN, "--routes", str(routes), "--port", str(port)], cwd=cwd,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base + "/healthz", timeout=1)
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield base
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        proc.wait(stop_timeout_s)
