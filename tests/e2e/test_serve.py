"""`canary serve` for real: a `prefect server start` on loopback, `canary serve` in its own process with a
15-second round interval, the simulator and a temp DuckDB; a scheduled run must complete.

Everything listens on 127.0.0.1 and is stopped at the end (process groups the test started, by id).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.alerts.route import NO_SLACK
from tests.support import NO_EXCLUSIONS
from tests.support.prefect_db import seed_prefect_home
from tests.support.processes import log_tails, poll_while_running, start_logged, stop_group
from tests.support.run_config import write_run_config

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = "acme/served-model"
MODEL_2 = "acme/served-model-2"
SLOW = {"kind": "slow_first_token", "delay_s": 5.0, "keepalive_s": 0.5}  # rounds long enough to overlap
FLEET = parse_fleet({"models": [{"id": m, "endpoints": [
    {"tag": "alpha", "provider_name": "Alpha", "faults": [SLOW]},
    {"tag": "beta", "provider_name": "Beta", "faults": [SLOW]},
    {"tag": "gamma", "provider_name": "Gamma", "faults": [SLOW]},
    {"tag": "refuser", "provider_name": "Refuser", "faults": [{"kind": "refusal"}]},
]} for m in (MODEL, MODEL_2)]})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SLACK_", "OPENROUTER_"))}
    env.update(
        DO_NOT_TRACK="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_HOME=str(home),
        PREFECT_LOGGING_LEVEL="INFO",  # what production runs at
    )
    return env


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return start_logged(argv, env, log, REPO)


_stop = stop_group


_poll = poll_while_running
_tails = log_tails


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


@pytest.mark.timing  # a 15 s schedule must keep up: cycles pile up on a busy CPU (scripts/test runs it alone)
def test_canary_serve_runs_scheduled_cycles_of_every_model(sim: SimulatorHandle, tmp_path: Path) -> None:
    """A real `prefect server start` + `canary serve`: the scheduled cycle runs both models' rounds as named
    subflow runs, concurrently, and each decides on its own."""
    started = time.monotonic()
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    db = tmp_path / "canary.duckdb"
    config = tmp_path / "canary.toml"
    config.write_text(
        f'models = ["{MODEL}", "{MODEL_2}"]\nmode = "enforce"\nbase_url = "{sim.base_url}"\ndb_path = "{db}"\n'
        f'publish_dir = "{tmp_path / "published"}"\nexclusions_file = "{NO_EXCLUSIONS}"\n'
        'languages = ["en"]\nttft_s = 30\nfail_rounds = 1\n',  # SLOW's 5 s only keeps rounds long: never a verdict
        encoding="utf-8",
    )
    server_env = _base_env(seed_prefect_home(tmp_path / "prefect-server"))
    server_env["PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS"] = "2"
    serve_env = _base_env(tmp_path / "prefect-client")
    serve_env.update(
        PREFECT_API_URL=api,
        PREFECT_RUNNER_POLL_FREQUENCY="2",
        OPENROUTER_API_KEY=sim.api_key,
        CANARY_SERVE_INTERVAL_S="15",
    )
    logs = [tmp_path / "server.log", tmp_path / "serve.log"]
    server = _start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                    server_env, logs[0])
    procs = [server]
    try:
        with httpx.Client(base_url=api, timeout=5) as client:
            _poll("the Prefect server", lambda: client.get("/health").status_code == 200, 180, procs, logs)
            metrics_port = _free_port()
            serve = _start([str(BIN / "canary"), "serve", "--config", str(config), "--metrics-port",
                            str(metrics_port)], serve_env, logs[1])
            procs.append(serve)

            def deployments() -> dict[str, Any] | None:
                found = {d["name"]: d for d in client.post("/deployments/filter", json={}).json()}
                return found if {"canary-cycle", "canary-deadman"} <= set(found) else None

            deps = _poll("both deployments", deployments, 120, procs, logs)
            # Prefect's zombie-run automation, for serve's heartbeat (Prefect's default 180 s: 3 beats)
            automations = client.post("/automations/filter", json={}).json()
            zombie = [a for a in automations if a["name"] == "canary-zombie-runs"]
            assert [(a["trigger"]["posture"], a["trigger"]["after"], a["trigger"]["within"], a["actions"][0]["state"])
                    for a in zombie] == [("Proactive", ["prefect.flow-run.heartbeat"], 540.0, "CRASHED")], zombie
            schedules = deps["canary-cycle"]["schedules"]
            assert [s["schedule"]["interval"] for s in schedules] == [15.0]
            assert deps["canary-deadman"]["schedules"][0]["schedule"]["interval"] == 900.0

            def completed() -> list[dict[str, Any]] | None:
                runs = client.post("/flow_runs/filter", json={
                    "deployments": {"id": {"any_": [deps["canary-cycle"]["id"]]}},
                    "flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}},
                }).json()
                return runs or None

            cycles = _poll("a completed scheduled cycle", completed, 120, procs, logs)

            def scraped() -> str | None:  # the serving process's own exporter, reading the snapshot
                text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
                return text if 'canary_rounds_total{model="' + MODEL + '",status="complete"}' in text else None

            exposition = _poll("canary_rounds_total from canary serve's /metrics", scraped, 60, procs, logs)
            assert cycles[0]["name"].startswith("canary-cycle-")
            rounds_of_cycle = client.post("/flow_runs/filter", json={
                "flows": {"name": {"any_": ["canary-round"]}},
            }).json()

        names = {r["name"] for r in rounds_of_cycle}
        assert any(n.startswith(f"canary-round-{MODEL}-") for n in names), names
        assert any(n.startswith(f"canary-round-{MODEL_2}-") for n in names), names
    finally:
        for p in reversed(procs):
            _stop(p)

    with store.open_store(db, read_only=True) as con:
        rounds = store.complete_rounds(con)
        spans = con.execute(
            "SELECT model, min(started_at), max(started_at) FROM attempts WHERE round_id IN (SELECT round_id FROM"
            " rounds WHERE round_ts = (SELECT min(round_ts) FROM rounds)) GROUP BY model"
        ).fetchall()
        suspended = con.execute("SELECT DISTINCT model, tag FROM decisions WHERE action = 'suspend'").fetchall()
        alerts = store.alert_rows(con, kind="suspend")
    assert {MODEL, MODEL_2} <= set(rounds["model"])
    assert set(rounds.iloc[0]["endpoints"]) == {"alpha", "beta", "gamma", "refuser"}
    (_, s1, e1), (_, s2, e2) = sorted(spans)
    assert s1 < e2 and s2 < e1, f"the two models' rounds of one cycle did not overlap: {spans}"
    assert sorted(suspended) == [(MODEL, "refuser"), (MODEL_2, "refuser")]  # each model decided on its own
    assert list(alerts["status"].unique()) == ["sent"]  # Slack not configured: "sent" to the log
    assert 'canary_endpoint_suspension_end_timestamp_seconds{model="' + MODEL + '",provider_tag="refuser"' in exposition
    print(f"serve e2e: {time.monotonic() - started:.1f} s")


def test_canary_serve_runs_a_cycle_at_start_on_a_database_without_one(sim: SimulatorHandle, tmp_path: Path) -> None:
    """With a week's interval: a fresh database gets its first cycle at once, not a week later (and it says
    why, and that Slack is not configured); Ctrl-C stops it with exit 130; served again on that database, the
    cycle it just ran is recent, so the schedule's first one is awaited."""
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    db = tmp_path / "canary.duckdb"
    config = write_run_config(sim, tmp_path, db, MODEL, ttft_s=30)
    serve_env = _base_env(tmp_path / "prefect-client")
    # a week: schedules are anchored (an hour's would tick on :00 and add a round to a run that crosses it)
    serve_env.update(PREFECT_API_URL=api, PREFECT_RUNNER_POLL_FREQUENCY="2", OPENROUTER_API_KEY=sim.api_key,
                     CANARY_SERVE_INTERVAL_S=str(7 * 24 * 3600))
    logs = [tmp_path / "server.log", tmp_path / "serve-1.log", tmp_path / "serve-2.log"]
    procs = [_start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                    _base_env(seed_prefect_home(tmp_path / "prefect-server")), logs[0])]
    try:
        with httpx.Client(base_url=api, timeout=5) as client:
            _poll("the Prefect server", lambda: client.get("/health").status_code == 200, 180, procs, logs)

            def cycles(state: str) -> list[dict[str, Any]] | None:
                return client.post("/flow_runs/filter", json={
                    "flows": {"name": {"any_": ["canary-cycle"]}},
                    "flow_runs": {"state": {"type": {"any_": [state]}}},
                }).json() or None

            first = _start([str(BIN / "canary"), "serve", "--config", str(config)], serve_env, logs[1])
            procs.append(first)
            [done] = _poll("a completed cycle right after the start", lambda: cycles("COMPLETED"), 180, procs, logs)
            os.killpg(procs.pop().pid, signal.SIGINT)  # Ctrl-C, as systemd and compose stop it
            try:
                code: int | None = first.wait(90)
            except subprocess.TimeoutExpired:  # still running: what it was doing is in its log
                code = None
            assert code == 130, _tails(logs)  # the documented exit of an interrupted command
            said = logs[1].read_text()
            assert f"serve: no complete full round of {MODEL} yet: a cycle runs now (flow run {done['id']})" in said
            assert f"serve: WARNING: {NO_SLACK}" in said  # no SLACK_* here: alerts would only reach the log

            procs.append(_start([str(BIN / "canary"), "serve", "--config", str(config)], serve_env, logs[2]))
            said = "the first cycle comes with the schedule"
            _poll("the second serve's first line", lambda: said in logs[2].read_text(), 120, procs, logs)
            every_cycle = client.post("/flow_runs/filter", json={"flows": {"name": {"any_": ["canary-cycle"]}}}).json()
            assert [r["id"] for r in every_cycle if "start-up" in r["tags"]] == [done["id"]]  # none at the restart
    finally:
        for p in reversed(procs):
            _stop(p)
    with store.open_store(db, read_only=True) as con:
        assert [r[0] for r in con.execute("SELECT status FROM rounds").fetchall()] == ["complete"]


@pytest.mark.unit
def test_prefect_yaml_matches_the_flows_and_the_config() -> None:
    """prefect.yaml's entrypoints are the flows; one cycle of canary.toml's models per interval."""
    import importlib

    import yaml

    from tasks.config.loading import load_config

    spec = yaml.safe_load((REPO / "prefect.yaml").read_text(encoding="utf-8"))
    deployments = {d["name"]: d for d in spec["deployments"]}
    assert set(deployments) == {"canary-cycle", "canary-deadman"}  # the watcher: `canary watch`, no deployment
    for name, dep in deployments.items():
        path, func = dep["entrypoint"].split(":")
        flow = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), func)
        assert flow.name == name
    cfg = load_config(REPO / "canary.toml")
    cycles = deployments["canary-cycle"]["schedules"]
    assert [s["interval"] for s in cycles] == [cfg.interval_min * 60]
    assert deployments["canary-cycle"]["parameters"]["models"] is None  # every model of canary.toml
    assert deployments["canary-deadman"]["schedules"][0]["interval"] == 900
    from provider_canary.cli.serve_cmd import CYCLE_DEPLOYMENT

    assert CYCLE_DEPLOYMENT == "canary-cycle/canary-cycle"  # where the watcher's confirmation rounds run


@pytest.mark.unit
def test_prefect_yaml_has_the_trigger_and_the_limits_canary_serve_creates() -> None:
    """The crashed-cycle trigger and the concurrency limits: prefect.yaml spells what tasks/orchestration/deployments.py
    gives `canary serve`, and Prefect's own models read both the same; the header counts the deployments."""
    import re

    import yaml
    from prefect.client.schemas.objects import ConcurrencyLimitConfig
    from prefect.events.schemas.deployment_triggers import DeploymentEventTrigger

    from tasks.orchestration.deployments import CHECK_CONCURRENCY, CYCLE_CONCURRENCY, concurrency, crash_trigger

    text = (REPO / "prefect.yaml").read_text(encoding="utf-8")
    deployments = {d["name"]: d for d in yaml.safe_load(text)["deployments"]}
    (trigger,) = deployments["canary-cycle"]["triggers"]
    assert DeploymentEventTrigger.model_validate(trigger) == crash_trigger("canary-cycle")
    limits = {name: ConcurrencyLimitConfig.model_validate(d["concurrency_limit"]) for name, d in deployments.items()}
    checks = concurrency(*CHECK_CONCURRENCY)
    assert limits == {"canary-cycle": concurrency(*CYCLE_CONCURRENCY), "canary-deadman": checks}
    words = {2: "two", 3: "three", 4: "four"}
    header = text.split("\nname:", 1)[0]
    assert re.search(rf"\b{words[len(deployments)]} deployments\b", header), header
    assert re.findall(r"\b(?:two|three|four|both) deployments\b", header) == [f"{words[len(deployments)]} deployments"]


@pytest.mark.unit
def test_interval_override_is_checked() -> None:
    from datetime import timedelta

    from provider_canary.cli.serve_cmd import interval_override
    from tasks.errors import ConfigError

    assert interval_override({}) is None
    assert interval_override({"CANARY_SERVE_INTERVAL_S": "5"}) == timedelta(seconds=5)
    for bad in ("abc", "0", "-3", "nan"):
        with pytest.raises(ConfigError, match="CANARY_SERVE_INTERVAL_S"):
            interval_override({"CANARY_SERVE_INTERVAL_S": bad})


@pytest.mark.integration
def test_serve_without_a_reachable_server_is_one_line(tmp_path: Path) -> None:
    env = _base_env(tmp_path / "home")
    env["PREFECT_API_URL"] = f"http://user:pw-not-shown@127.0.0.1:{_free_port()}/api"
    out = subprocess.run([str(BIN / "canary"), "serve", "--config", str(REPO / "canary.toml")], env=env,
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.startswith("canary: serve: the Prefect API at http://127.0.0.1:")
    assert "Traceback" not in out.stderr and "pw-not-shown" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
