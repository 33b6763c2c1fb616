"""`canary metrics` as a user runs it (the console script): one scrape with --once, and operator errors as one
line, exit 2, no traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tasks import store

pytestmark = pytest.mark.integration
CANARY = str(Path(sys.executable).with_name("canary"))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CANARY, "metrics", *args], capture_output=True, text=True, timeout=60)


def test_once_prints_a_scrape_prometheus_client_parses(tmp_path: Path) -> None:
    db = tmp_path / "canary.duckdb"
    with store.open_store(db, snapshot=True) as con:
        store.set_setting(con, "mode", "enforce", at=datetime.now(UTC))
    out = run("--db", str(db), "--once")
    assert out.returncode == 0, out.stderr
    names = {f.name for f in text_string_to_metric_families(out.stdout)}
    assert {"canary_build_info", "canary_snapshot_up", "canary_alerts_pending", "canary_schema_version"} <= names


def test_a_missing_database_is_one_line(tmp_path: Path) -> None:
    out = run("--db", str(tmp_path / "nope.duckdb"), "--once")
    assert out.returncode == 2
    assert out.stderr.startswith("canary: no database at ") and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "nope.duckdb").exists()


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "canary.duckdb"
    with store.open_store(db, snapshot=True):
        pass
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        out = run("--db", str(db), "--port", str(busy.getsockname()[1]))
    assert out.returncode == 2
    assert out.stderr.startswith("canary: metrics: cannot listen on 127.0.0.1:")
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
