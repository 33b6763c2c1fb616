"""Live counts and route events still pending when the router stops on a busy DuckDB file are kept on disk and
written at the next start (issue 29: 50 of 50 were lost). The router runs as deployed (`canary router`, its own
process, stopped by SIGINT); another process holds the database the whole first run, as a notebook would."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream, Script
from tests.support.router_proc import router_process

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

HOLD = "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('holding', flush=True); time.sleep(600)"


def ask(base: str, n: int) -> None:
    for _ in range(n):
        reply = httpx.post(base + "/v1/chat/completions", timeout=30,
                           json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]})
        assert reply.status_code == 200


def test_counts_pending_on_a_busy_database_at_stop_are_written_at_the_next_start(tmp_path: Path) -> None:
    db = tmp_path / "canary.duckdb"
    with FakeUpstream({"t1": Script("http_error", status=503), "t2": Script("ok")}) as up:
        routes = tmp_path / "routes.toml"
        routes.write_text(
            '[router]\nevents_db = "canary.duckdb"\nflush_interval_s = 0.2\nallowed_fails = 0\n'  # no breaker: 5 x 503
            '[[route]]\nmodel = "chat"\n'
            + "".join(f'[[route.tier]]\nbase_url = "{up.base_url}"\nmodel = "{m}"\nprovider = {{ only = ["{m}"] }}\n'
                      for m in ("t1", "t2")), encoding="utf-8")
        holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdout=subprocess.PIPE)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == b"holding"
            with router_process(routes, tmp_path / "router.log") as base:
                ask(base, 5)
                time.sleep(0.5)
            kept = list((tmp_path / "canary.duckdb.router-pending").glob("*.jsonl"))
        finally:
            holder.kill()
            holder.wait()
        assert sorted(p.name.split("-")[0] for p in kept) == ["live_requests", "route_events"]
        log = (tmp_path / "router.log").read_text(encoding="utf-8")
        assert "records kept in" in log and "for the next start" in log

        with router_process(routes, tmp_path / "router.log") as base:
            health = httpx.get(base + "/healthz").json()
            assert health["restored_from_disk"] >= 6  # 5 route events, and the live counts of 10 attempts
            deadline = time.monotonic() + 30
            while httpx.get(base + "/healthz").json()["pending_on_disk"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert httpx.get(base + "/healthz").json()["pending_on_disk"] == 0
    assert not list((tmp_path / "canary.duckdb.router-pending").glob("*.jsonl"))
    con = duckdb.connect(str(db), read_only=True)
    try:
        live = con.execute("SELECT tier, outcome, sum(requests)::INT FROM live_requests WHERE quality IS NULL "
                           "GROUP BY ALL ORDER BY 1")
        assert live.fetchall() == [(1, "http_5xx", 5), (2, "ok", 5)]
        assert con.execute("SELECT count(*), min(reason) FROM route_events").fetchall() == [(5, "http_503")]
    finally:
        con.close()
