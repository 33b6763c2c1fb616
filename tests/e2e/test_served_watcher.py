"""The watcher served for real: a `prefect server start` on loopback, the simulator, a first full round by
`canary run`, then

* `canary serve`: while nothing is suspected, no flow run of the watcher's (there is no `canary-watch` flow any
  more) and no run at all besides the dead-man's schedule; then the router's judged answers show one endpoint
  failing its tool calls far more than its peers, and exactly one flow run follows: the `canary-cycle` run that
  confirms it, probing that endpoint's tools contract only; its pinned probes find the endpoint clean, so the
  suspicion is `cleared` and nothing changes;
* `canary watch` (the watcher as its own service, for the work-pool path): `--once --json` prints the look and
  schedules the confirmation run; the long-running form stops on SIGTERM, exit 0.

Everything listens on 127.0.0.1 and is stopped at the end (process groups the test started, by id).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.core.types import Endpoint, Mode, RoundInfo
from tasks.orchestration.deployments import SCHEDULE_ANCHOR
from tasks.store.live import append_live_counts
from tests.support import NO_EXCLUSIONS
from tests.support.prefect_db import seed_prefect_home
from tests.support.prefect_runs import read_route_events
from tests.support.processes import log_tails, poll_while_running, served_env, start_logged, stop_group
from tests.support.prometheus import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = "acme/served-watch"
OTHER = "acme/served-watch-2"
TAGS = ("alpha", "beta", "gamma")
FLEET = parse_fleet({"models": [
    {"id": MODEL, "endpoints": [{"tag": t, "provider_name": t.title()} for t in TAGS]},
    {"id": OTHER, "endpoints": [
        {"tag": "dipping", "provider_name": "Dipping", "faults": [{"kind": "uptime_dip", "uptime_5m": 30.0}]},
        {"tag": "steady", "provider_name": "Steady"}]},
]})


@dataclass
class Served:
    api: str
    config: Path
    db: Path
    env: dict[str, str]
    tmp: Path
    sim: SimulatorHandle


_env = served_env


_poll = poll_while_running
_tails = log_tails


def _runs(api: str, **flt: Any) -> list[dict[str, Any]]:
    response = httpx.post(f"{api}/flow_runs/filter", json={"limit": 200, **flt}, timeout=10)
    response.raise_for_status()
    return list(response.json())


def _flow_names(api: str) -> dict[str, str]:
    response = httpx.post(f"{api}/flows/filter", json={}, timeout=10)
    response.raise_for_status()
    return {f["id"]: f["name"] for f in response.json()}


def _events(api: str, since: datetime) -> list[dict[str, Any]]:
    return read_route_events(api, "canary.endpoint.suspected", since)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("served-watcher")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    log = tmp / "prefect-server.log"
    server_env = _env(seed_prefect_home(tmp / "server-home"))
    server_env["PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS"] = "2"
    server = start_logged([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                          server_env, log, REPO)
    try:
        with start_simulator(FLEET, time_scale=0.05) as sim:
            db = tmp / "canary.duckdb"
            config = tmp / "canary.toml"
            # the watcher looks every 10 s (suspect_confirm_after_s / 3); no follow-up confirmations, one language
            config.write_text(
                f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "{sim.base_url}"\ndb_path = "{db}"\n'
                f'publish_dir = "{tmp / "published"}"\nexclusions_file = "{NO_EXCLUSIONS}"\n'
                'languages = ["en"]\nttft_s = 8\nsuspect_confirm_after_s = 30\nconfirm_after_min = 0\n',
                encoding="utf-8")
            env = _env(tmp / "client-home")
            env.update(PREFECT_API_URL=api, OPENROUTER_API_KEY=sim.api_key, PREFECT_RUNNER_POLL_FREQUENCY="2")
            _poll("the Prefect server", lambda: httpx.get(f"{api}/health", timeout=3).status_code == 200, 180,
                  [server], [log])
            out = subprocess.run([str(BIN / "canary"), "run", "--config", str(config)], cwd=REPO, env=env,
                                 capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stderr[-3000:]  # the model's first full round
            yield Served(api, config, db, env, tmp, sim)
    finally:
        stop_group(server)


def _judged(tag: str, ok: int, failed: int) -> list[LiveCount]:
    """What the router writes for the tool calls it judged on `tag` this minute (router/ lands it for real)."""
    minute = datetime.now(UTC).replace(second=0, microsecond=0)
    return [LiveCount(minute, MODEL, "model:tools", 1, tag, tag.title(), LiveOutcome.OK, ok, LiveQuality.TOOLS, "ok"),
            LiveCount(minute, MODEL, "model:tools", 1, tag, tag.title(), LiveOutcome.QUALITY_FAIL, failed,
                      LiveQuality.TOOLS, "schema_violation")]


def test_canary_serve_watches_without_flow_runs_and_a_suspicion_is_exactly_its_confirmation_run(
        served: Served) -> None:
    api = served.api
    logs = [served.tmp / "serve.log"]
    before = {r["id"] for r in _runs(api)}
    week = timedelta(days=7)  # no scheduled cycle within the test: the grid is Thursdays 00:00 UTC
    env = {**served.env, "CANARY_SERVE_INTERVAL_S": str(int(week.total_seconds()))}
    serve = start_logged([str(BIN / "canary"), "serve", "--config", str(served.config)], env, logs[0], REPO)
    procs = [serve]
    try:
        def registered() -> bool:
            names = {d["name"] for d in httpx.post(f"{api}/deployments/filter", json={}, timeout=5).json()}
            return {"canary-cycle", "canary-deadman"} <= names

        _poll("the deployments", registered, 120, procs, logs)
        quiet_from = datetime.now(UTC)
        time.sleep(25)  # at least two of the watcher's looks (every 10 s) at a quiet model
        flows = _flow_names(api)
        new = [r for r in _runs(api) if r["id"] not in before]
        assert "canary-watch" not in flows.values()  # no watcher flow, no watcher deployment
        ran = [r["name"] for r in new if r["state_type"] != "SCHEDULED" and flows[r["flow_id"]] != "canary-deadman"]
        assert ran == [], f"flow runs while nothing was suspected: {ran}"
        # the schedule honours CANARY_SERVE_INTERVAL_S: its first tick is the next point of the weekly grid anchored at
        # SCHEDULE_ANCHOR (the default 30 minutes would put one within half an hour), and no start-up cycle is due
        # (the model's round is fresh)
        ticks = sorted(datetime.fromisoformat(r["expected_start_time"]) for r in new
                       if flows[r["flow_id"]] == "canary-cycle")
        grid = SCHEDULE_ANCHOR + week * -((SCHEDULE_ANCHOR - quiet_from) // week)
        assert ticks and ticks[0] == grid, f"cycle runs due: {ticks}, the weekly grid's next point: {grid}"
        cycles_before = {r["id"] for r in new}

        # the router's judged tool calls: alpha fails far more often than its peers
        append_live_counts(served.db, [*_judged("alpha", 4, 26), *_judged("beta", 30, 0), *_judged("gamma", 29, 1)])

        def confirmation() -> dict[str, Any] | None:  # the cycle deployment's run (its round is a subflow run)
            runs = [r for r in _runs(api) if "suspicion" in r["tags"] and r["parent_task_run_id"] is None]
            done = [r for r in runs if r["state_type"] in ("COMPLETED", "FAILED", "CRASHED")]
            return done[0] if done else None

        run = _poll("the confirmation run to finish", confirmation, 180, procs, logs)
        assert run["state_type"] == "COMPLETED", _tails(logs)
        assert run["parameters"]["only"] == ["alpha"] and run["parameters"]["contracts"] == {"alpha": ["tools"]}
        assert run["parameters"]["confirms"].startswith("suspicion:alpha@")
        flows = _flow_names(api)
        top = [r for r in _runs(api) if r["id"] not in before | cycles_before and r["parent_task_run_id"] is None
               and flows[r["flow_id"]] != "canary-deadman"]
        assert [r["id"] for r in top] == [run["id"]], "\n".join(  # exactly the confirmation run
            f"{r['name']} {r['state_type']} {r['expected_start_time']} {r['tags']} {r['parameters']}"
            for r in _runs(api)) + _tails(logs)

        def resolved() -> list[tuple[Any, ...]] | None:
            with store.open_store(served.db, read_only=True, lock_timeout_s=30) as con:
                rows = con.execute("SELECT tag, signal, quality, status, round_status FROM suspicions").fetchall()
            return rows if rows and rows[0][3] != "scheduled" else None

        # the next look reads what the pinned probes said: alpha's tool calls are fine, nothing changes
        assert _poll("the suspicion resolved", resolved, 60, procs, logs) == [
            ("alpha", "live_quality", "tools", "cleared", "clean")]
        with store.open_store(served.db, read_only=True) as con:
            tools = con.execute("SELECT DISTINCT contract FROM attempts a JOIN rounds r USING (round_id) "
                                "WHERE r.partial").fetchall()  # what the confirmation round probed
            assert con.execute("SELECT count(*) FROM decisions WHERE tag = 'alpha'").fetchone() == (0,)
        assert tools == [("tools",)]
        [event] = _poll("the suspicion's event", lambda: _events(api, quiet_from), 30, procs, logs)
        assert event["resource"]["prefect.resource.id"] == f"canary.endpoint.{MODEL}.alpha"
        assert (event["payload"]["signal"], event["payload"]["quality"]) == ("live_quality", "tools")
    finally:
        stop_group(serve)


def test_canary_watch_is_the_watcher_as_its_own_service(served: Served) -> None:
    """The work-pool path: no watcher deployment, `canary watch` beside the worker. `--once` prints one look
    and schedules the confirmation run on the cycle deployment; the service stops on SIGTERM, exit 0."""
    config = served.tmp / "other.toml"
    db = served.tmp / "other.duckdb"
    config.write_text(f'models = ["{OTHER}"]\nbase_url = "{served.sim.base_url}"\ndb_path = "{db}"\n'
                      f'publish_dir = "{served.tmp / "other-published"}"\n'
                      f'exclusions_file = "{NO_EXCLUSIONS}"\n', encoding="utf-8")
    with store.open_store(db) as con:  # its first full round
        info = RoundInfo(f"{OTHER}@full", OTHER, datetime.now(UTC) - timedelta(minutes=5), Mode.OBSERVE)
        store.land_round(con, info, [], endpoints=[Endpoint(OTHER, t, "") for t in ("dipping", "steady")],
                         status="complete")
    out = subprocess.run([str(BIN / "canary"), "watch", "--config", str(config), "--once", "--json"], cwd=REPO,
                         env=served.env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    [look] = json.loads(out.stdout)
    assert [(s["tag"], s["signal"]) for s in look["suspicions"]] == [("dipping", "uptime_drop")]
    run_id = look["confirmation"]["flow_run_id"]
    run = httpx.get(f"{served.api}/flow_runs/{run_id}", timeout=10).json()
    assert run["name"].startswith("canary-confirm-acme-served-watch-2-") and run["parameters"]["only"] == ["dipping"]
    assert run["parameters"]["config_path"] == str(config)
    httpx.delete(f"{served.api}/flow_runs/{run_id}", timeout=10)  # nothing serves the cycle deployment now

    log = served.tmp / "watch.log"
    watch = start_logged([str(BIN / "canary"), "watch", "--config", str(config)], served.env, log, REPO)
    try:
        _poll("canary watch to start", lambda: "canary watch: 1 model(s)" in log.read_text(errors="replace"), 60,
              [watch], [log])
        os.kill(watch.pid, signal.SIGTERM)
        assert watch.wait(30) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        stop_group(watch)
    assert "Traceback" not in log.read_text(errors="replace")
