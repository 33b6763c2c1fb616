"""Prefect's server on PostgreSQL, for real, and the Prefect mechanisms the canary deploys there.

A throwaway PostgreSQL cluster (tests/support/postgres.py: initdb + pg_ctl, its unix socket only) and one real
`prefect server start` on it, connected as deploy/ connects (PREFECT_API_DATABASE_CONNECTION_URL, asyncpg, the
socket), shared by the module's tests:

* `canary serve` with the Slack double: its cycles' flow runs complete and are in PostgreSQL's own tables (read
  through Prefect's API and with SQL); then, with serve stopped, nothing of the canary running, Prefect's server
  alone fires the Proactive dead-man and posts to Slack;
* then `prefect deploy` of the repo's prefect.yaml, twice: its build step updates that same automation (one of
  that name), and the second deploy (the schedules replaced, their auto-scheduled runs made again) keeps the next
  round's time, on :00 or :30 (the anchored schedule). In this order because a deployment `canary serve` takes
  over from `prefect deploy` keeps the work pool's pull steps (Prefect updates a served deployment in place), and
  its runs would fail to load their flow: docs/operations.md says to delete the deployment when switching.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import start_simulator
from tasks import store
from tasks.orchestration.deployments import SCHEDULE_ANCHOR
from tests.support.postgres import PostgresCluster
from tests.support.processes import poll_while_running, served_env, start_logged, stop_group
from tests.support.prometheus import free_port
from tests.support.run_config import write_run_config
from tests.support.slack_server import CHANNEL_ID, SlackServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DATABASE = "prefect_e2e"
MODEL = "acme/postgres-model"
FLEET = parse_fleet({"models": [{"id": MODEL, "endpoints": [
    {"tag": t, "provider_name": t.title()} for t in ("alpha", "beta", "gamma")]}]})
TOKEN = "xoxb-postgres-test-token"
#: serve's round interval here: the dead-man's window is two of them (20 s; Prefect's least is 10 s)
INTERVAL_S = 10
SILENT = "canary-cycle-silent"


@dataclass
class PgServer:
    api: str
    postgres: PostgresCluster
    proc: subprocess.Popen[bytes]
    log: Path


@pytest.fixture(scope="module")
def pg_server(postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServer]:
    tmp = tmp_path_factory.mktemp("prefect-postgres")
    postgres.create_database(DATABASE)
    port = free_port()
    env = served_env(tmp / "server-home")
    env.update(PREFECT_API_DATABASE_CONNECTION_URL=postgres.socket_url(DATABASE),
               PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS="1")
    log = tmp / "prefect-server.log"
    proc = start_logged([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env,
                        log, REPO)
    api = f"http://127.0.0.1:{port}/api"
    try:
        poll_while_running("the Prefect server on PostgreSQL", lambda: httpx.get(f"{api}/health", timeout=5)
                           .status_code == 200, 240, [proc], [log])
        yield PgServer(api, postgres, proc, log)
    finally:
        stop_group(proc)


def _post(api: str, path: str, body: Any) -> Any:
    reply = httpx.post(f"{api}{path}", json=body, timeout=30)
    assert reply.is_success, f"{path}: {reply.status_code} {reply.text[:500]}"
    return reply.json()


def _automations(api: str, name: str) -> list[dict[str, Any]]:
    return [a for a in _post(api, "/automations/filter", {}) if a["name"] == name]


def _scheduled(api: str, deployment_id: str, after: datetime | None = None) -> list[dict[str, Any]]:
    """The runs the deployment's current schedule made, next first (from `after` on). Prefect keys each with its
    schedule's id (`scheduled <deployment> <schedule> <time>`): runs of a schedule a deploy just replaced, not yet
    deleted by the server, are not these."""
    [schedule] = httpx.get(f"{api}/deployments/{deployment_id}", timeout=30).json()["schedules"]
    since = {"expected_start_time": {"after_": after.isoformat()}} if after else {}
    runs = _post(api, "/flow_runs/filter", {"deployments": {"id": {"any_": [deployment_id]}},
                                            "flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}}, **since},
                                            "sort": "EXPECTED_START_TIME_ASC"})
    mine = [r for r in runs if f" {schedule['id']} " in (r["idempotency_key"] or "")]
    # A scheduler pass that read the deployment just before a deploy replaced its interval can still insert runs
    # on the old grid under the schedule's id (seen once at load: a 10 s grid's run after the 1800 s deploy).
    # The runs of the schedule as it now stands are those on its own grid.
    every, anchor = schedule["schedule"]["interval"], datetime.fromisoformat(schedule["schedule"]["anchor_date"])
    return [r for r in mine
            if (datetime.fromisoformat(r["expected_start_time"]) - anchor).total_seconds() % every == 0]


def test_served_cycles_are_in_postgres_and_the_dead_man_fires_with_serve_stopped(pg_server: PgServer,
                                                                                 tmp_path: Path) -> None:
    started = time.monotonic()
    api = pg_server.api
    with start_simulator(FLEET) as sim, SlackServer(token=TOKEN) as slack:
        db = tmp_path / "canary.duckdb"
        config = write_run_config(sim, tmp_path, db, MODEL, ttft_s=30)
        env = served_env(tmp_path / "client-home")
        env.update(PREFECT_API_URL=api, PREFECT_RUNNER_POLL_FREQUENCY="2", OPENROUTER_API_KEY=sim.api_key,
                   CANARY_SERVE_INTERVAL_S=str(INTERVAL_S), SLACK_BOT_TOKEN=TOKEN, SLACK_CHANNEL=CHANNEL_ID,
                   SLACK_API_URL=slack.api_url)
        logs = [pg_server.log, tmp_path / "serve.log"]
        serve = start_logged([str(BIN / "canary"), "serve", "--config", str(config)], env, logs[1], REPO)
        procs = [pg_server.proc, serve]
        try:
            said = f"serve: dead-man automation {SILENT} "
            poll_while_running("the dead-man line", lambda: said in logs[1].read_text(), 120, procs, logs)
            [automation] = _automations(api, SILENT)  # whoever made it first (prefect deploy), one of them
            assert automation["trigger"]["within"] == 2 * INTERVAL_S
            assert [a["type"] for a in automation["actions"]] == ["call-webhook"]

            def rounds_done() -> list[dict[str, Any]] | None:
                return _post(api, "/flow_runs/filter", {"flows": {"name": {"any_": ["canary-round"]}},
                                                        "flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}})

            rounds = poll_while_running("a completed round", rounds_done, 240, procs, logs)
            deployment = _post(api, "/deployments/filter", {"deployments": {"name": {"any_": ["canary-cycle"]}}})[0]
            in_tables = pg_server.postgres.query(
                DATABASE, "SELECT r.id::text, r.name FROM flow_run r JOIN flow f ON f.id = r.flow_id "
                "WHERE f.name = 'canary-round' AND r.state_type = 'COMPLETED'")
            assert {r["id"] for r in rounds} <= {row[0] for row in in_tables}
            assert all(name.startswith(f"canary-round-{MODEL}-") for _, name in in_tables)
            for run in _scheduled(api, deployment["id"]):  # serve's schedule, on the anchored 15 s lattice
                offset = datetime.fromisoformat(run["expected_start_time"]) - SCHEDULE_ANCHOR
                assert offset.total_seconds() % INTERVAL_S == 0, run["expected_start_time"]
        finally:
            stop_group(serve)
        stopped_at = time.time()

        def silence_posted() -> list[Any] | None:  # Prefect's server, with nothing of the canary running
            return [m for m in slack.messages if m.ts and float(m.ts) > stopped_at
                    and "The canary is silent" in (m.body or {}).get("text", "")] or None

        [posted, *_] = poll_while_running("the dead-man's Slack post", silence_posted, 4 * INTERVAL_S + 60,
                                          [pg_server.proc], logs)
        assert posted.body["channel"] == CHANNEL_ID and "no run of `canary-cycle` completed" in posted.body["text"]
        assert {k.lower(): v for k, v in posted.headers.items()}["authorization"] == f"Bearer {TOKEN}"
        ours = f"prefect.automation.{automation['id']}"

        def recorded() -> list[dict[str, Any]] | None:  # the event persister writes in batches
            events = _post(api, "/events/filter", {"filter": {"event": {"prefix": ["prefect.automation."]},
                                                              "any_resource": {"id": [ours]}}, "limit": 50})
            done = [e for e in events["events"] if e["event"] == "prefect.automation.action.executed"]
            return events["events"] if done else None

        events = poll_while_running("the action's event", recorded, 60, [pg_server.proc], logs)
        executed = [e for e in events if e["event"] == "prefect.automation.action.executed"]
        assert executed[0]["payload"]["status_code"] == 200, executed
        assert {"prefect.automation.triggered", "prefect.automation.action.triggered"} <= {e["event"] for e in events}
        assert TOKEN not in json.dumps(events)  # the token stays in the block
    with store.open_store(db, read_only=True) as con:
        assert MODEL in set(store.complete_rounds(con)["model"])
    print(f"postgres serve + dead-man e2e: {time.monotonic() - started:.1f} s")


def test_prefect_deploy_applies_the_dead_man_and_a_redeploy_keeps_the_next_round(pg_server: PgServer,
                                                                                  tmp_path: Path) -> None:
    from prefect.workers.process import ProcessWorker

    api = pg_server.api
    _post(api, "/work_pools/", {"name": "canary-pool", "type": "process",
                                "base_job_template": ProcessWorker.get_default_base_job_template()})
    env = served_env(tmp_path / "deploy-home")
    env.update(PREFECT_API_URL=api, CANARY_HOME=str(REPO), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")

    def deploy() -> str:
        done = subprocess.run([str(BIN / "prefect"), "--no-prompt", "deploy", "--all", "--prefect-file",
                               str(REPO / "prefect.yaml")], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=300)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-4000:]
        return out

    now = datetime.now(UTC)
    said = deploy()  # after the served test, the automation serve made is updated (no Slack settings here)
    assert re.search(rf"dead-man automation {SILENT} (created|updated): no completed run within 60 min -> no action",
                     said), said[-3000:]
    [automation] = _automations(api, SILENT)
    assert automation["trigger"]["posture"] == "Proactive" and automation["trigger"]["within"] == 3600
    deps = {d["name"]: d for d in _post(api, "/deployments/filter", {})}
    cycle = deps["canary-cycle"]["id"]
    first = poll_while_running("the scheduler's runs of canary-cycle", lambda: _scheduled(api, cycle, now), 120,
                               [pg_server.proc], [pg_server.log])
    next_round = datetime.fromisoformat(first[0]["expected_start_time"])
    [schedule] = httpx.get(f"{api}/deployments/{cycle}", timeout=30).json()["schedules"]
    assert schedule["schedule"]["interval"] == 1800, schedule  # prefect.yaml's 30 minutes, anchored at midnight:
    assert next_round.minute in (0, 30) and (next_round.second, next_round.microsecond) == (0, 0), next_round

    said = deploy()  # a redeploy: the schedule is replaced, its auto-scheduled runs are made again
    assert f"dead-man automation {SILENT} updated" in said, said[-3000:]
    before = {r["id"] for r in first}

    def made_again() -> list[dict[str, Any]] | None:
        runs = _scheduled(api, cycle, now)
        return runs if runs and not {r["id"] for r in runs} & before else None

    again = poll_while_running("the runs the redeploy scheduled", made_again, 120, [pg_server.proc], [pg_server.log])
    assert datetime.fromisoformat(again[0]["expected_start_time"]) == next_round
    assert [a["id"] for a in _automations(api, SILENT)] == [automation["id"]]  # updated in place, not doubled
