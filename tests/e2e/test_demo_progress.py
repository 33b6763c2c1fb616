"""`canary demo` says what a newcomer waits for (issue 24: 25 s of silence before round 1's table): the probe
worker, the private Prefect server, and each round's probes, before the table that ends the wait."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def test_the_demo_announces_every_wait_before_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "CANARY_"))}
    exe = Path(sys.executable).with_name("canary")
    proc = subprocess.run([str(exe), "demo", "--rounds", "1", "--db", str(tmp_path / "d.duckdb")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()

    def first(text: str) -> int:
        found = [i for i, line in enumerate(lines) if text in line]
        assert found, (text, proc.stdout[-3000:])
        return found[0]

    worker = first("starting the probe worker...")  # the detector loads its models lazily (issue 32.4)
    server = first("starting a private Prefect server")
    ready = first("ready after")
    probing = first("round 1 of 1: probing the 15 endpoints")
    table = first("Round 1 —")
    assert first("simulator at") < worker < server < ready < probing < table
    assert table < first("streak f/c = failing / clean rounds")  # the table's legend names every column
