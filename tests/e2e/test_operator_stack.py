"""The operator's stack end to end, as an operator runs it: a real `prefect server start`, the simulator, the
Slack double, two `canary run`s (console script, subprocesses) in which a refusing endpoint is suspended; then
`canary metrics` and a real `canary router` (traffic that is served, fails over, fails on every tier and breaks
after its first chunk) scraped by a real Prometheus (the `prometheus` binary on a loopback port, temp config and
storage, the repo's rules), and the Prefect server's own event feed and artifacts.

One suspension shows in all four places: DuckDB (the decision), Slack (its alert), the metrics (a PromQL query
answers the suspended endpoints) and Prefect's event feed (`canary.endpoint.suspended` with its evidence); every
query of the Grafana dashboard returns data. Then `canary serve` on its own database: the cycle's process is
SIGKILLed mid-round, the deployment's trigger runs the cycle again (`prefect.automation.action.executed`, the new
run completes and marks the dead round crashed), and a second crash inside the trigger's window runs nothing.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from provider_canary.simulator.server import start_simulator
from tasks import store
from tasks.core.types import Decision
from tests.support import NO_EXCLUSIONS
from tests.support.operator_stack import (
    BIN,
    FLEET,
    MODEL,
    REPO,
    SERVED,
    TOKEN,
    EventTrail,
    Stack,
    every_dashboard_query_returns_data,
    kill_the_running_cycle,
    route_traffic,
    run_now,
    stack_env,
    start,
    start_router,
    stop,
    wait_for,
    wait_http,
)
from tests.support.prefect_db import seed_prefect_home
from tests.support.prefect_runs import read_route_events
from tests.support.prometheus import free_port, prometheus, require_binary
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e

@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_binary("prometheus")  # skip (fail on CI) before anything starts
    tmp = tmp_path_factory.mktemp("operator-stack")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    server_log = tmp / "prefect-server.log"
    server = start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                    stack_env(seed_prefect_home(tmp / "server-home")), server_log)
    try:
        with start_simulator(FLEET, time_scale=0.1) as sim, SlackServer(token=TOKEN) as slack:
            db = tmp / "canary.duckdb"
            config = tmp / "canary.toml"
            config.write_text(
                f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "{sim.base_url}"\ndb_path = "{db}"\n'
                f'publish_dir = "{tmp / "published"}"\nexclusions_file = "{NO_EXCLUSIONS}"\n'
                # two runs seconds apart count as two rounds only without the policy's spacing (confirm_after_min)
                'languages = ["en"]\nttft_s = 8\nfail_rounds = 2\nconfirm_after_min = 0\n', encoding="utf-8")
            env = stack_env(tmp / "client-home")
            env.update(PREFECT_API_URL=api, OPENROUTER_API_KEY=sim.api_key, SLACK_BOT_TOKEN=TOKEN,
                       SLACK_CHANNEL="#canary-admins", SLACK_API_URL=slack.api_url)
            wait_http(f"{api}/health", server, server_log)
            started = datetime.now(UTC)
            for n in (1, 2):
                out = subprocess.run([str(BIN / "canary"), "run", "--config", str(config)], cwd=REPO, env=env,
                                     capture_output=True, text=True, timeout=300)
                assert out.returncode == 0, f"run {n}: {out.stderr[-3000:]}"
            yield Stack(api, db, config, env, slack, started, tmp, sim.base_url, sim.api_key)
    finally:
        stop(server)


_events = read_route_events


def test_a_suspension_shows_in_duckdb_slack_metrics_and_the_event_feed(stack: Stack) -> None:
    # 1. DuckDB: the decision, with its two failing rounds as evidence
    with store.open_store(stack.db, read_only=True) as con:
        suspended = [d for d in store.decisions_between(con) if d.action == "suspend"]
    assert [(d.model, d.tag) for d in suspended] == [(MODEL, "refuser")]
    decision = suspended[0]
    assert len(decision.evidence_round_ids) == 2

    # 2. Slack: its round's message, by the outbox key (a round's decisions of a model are one message)
    assert f"decisions|{decision.round_id}" in {m.alert_key for m in stack.slack.messages}

    # 3. The metrics: `canary metrics` and a router scraped by a real Prometheus, asked in PromQL
    port = free_port()
    log = stack.tmp / "metrics.log"
    exporter = start([str(BIN / "canary"), "metrics", "--db", str(stack.db), "--config", str(stack.config),
                      "--port", str(port)], stack.env, log)
    router_port, router = start_router(stack)
    try:
        wait_http(f"http://127.0.0.1:{port}/metrics", exporter, log, timeout_s=60)
        _the_exposition_says_refuser_is_excluded(port)
        route_traffic(router_port)
        _prometheus_answers_the_suspension(stack, port, router_port)
    finally:
        stop(exporter)
        stop(router)

    # 4. Prefect's event feed on the real server: the decision, its resource and its evidence
    _the_event_feed_holds_the_decision(stack, decision)


def _the_exposition_says_refuser_is_excluded(port: int) -> None:
    """`canary metrics`' text, read by prometheus_client's own parser and checked by promtool."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    families = {f.name: f for f in text_string_to_metric_families(text)}  # prometheus_client's own parser
    excluded = {(s.labels["provider_tag"], s.labels["layer"]): s.value
                for s in families["canary_endpoint_excluded"].samples}
    assert excluded[("refuser", "canary")] == 1 and excluded[("alpha", "canary")] == 0
    assert families["canary_routable_endpoints"].samples[0].value == 3
    rounds = {s.labels["status"]: s.value for s in families["canary_rounds"].samples}
    assert rounds == {"complete": 2}
    assert families["gen_ai_client_operation_time_to_first_chunk_seconds"].type == "histogram"
    promtool = subprocess.run([require_binary("promtool"), "check", "metrics"], input=text, capture_output=True,
                              text=True, timeout=60)
    assert promtool.returncode == 0 and not (promtool.stdout + promtool.stderr).strip(), promtool.stdout


def _prometheus_answers_the_suspension(stack: Stack, port: int, router_port: int) -> None:
    """A real Prometheus scraping the exporter and the router: the exclusion, its alert firing, the probe's
    success, the TTFT histogram, both targets up, and every dashboard query with data."""
    with prometheus(stack.tmp / "prometheus", [f"127.0.0.1:{port}"],
                    more_jobs={"canary-router": [f"127.0.0.1:{router_port}"]}) as prom:
        result = prom.wait_for('canary_endpoint_excluded{layer="canary"} == 1')
        assert sorted(r["metric"]["provider_tag"] for r in result) == ["refuser"]
        assert {r["metric"]["model"] for r in result} == {MODEL}
        firing = prom.wait_for('ALERTS{alertname="CanaryEndpointSuspended", alertstate="firing"}')
        assert [r["metric"]["provider_tag"] for r in firing] == ["refuser"]
        assert prom.query('canary_probe_success{provider_tag="refuser", contract="refusal"}')[0]["value"][1] == "0"
        assert prom.query('histogram_quantile(0.95, sum by (provider_tag, le) '
                          '(gen_ai_client_operation_time_to_first_chunk_seconds_bucket))')
        assert {t["labels"]["job"]: t["health"] for t in prom.targets()} == {"canary": "up", "canary-router": "up"}
        every_dashboard_query_returns_data(prom, router_port)


def _the_event_feed_holds_the_decision(stack: Stack, decision: Decision) -> None:
    deadline = time.monotonic() + 30
    while not (events := _events(stack.api, "canary.endpoint.suspended", stack.started - timedelta(minutes=5))):
        assert time.monotonic() < deadline, "no canary.endpoint.suspended event in the server's feed"
        time.sleep(1)
    assert len(events) == 1
    event = events[0]
    assert event["resource"]["prefect.resource.id"] == f"canary.endpoint.{MODEL}.refuser"
    assert event["payload"]["evidence_round_ids"] == list(decision.evidence_round_ids)
    assert event["payload"]["ladder_step"] == decision.ladder_step
    roles = {r.get("prefect.resource.role") for r in event["related"]}
    assert {"model", "flow-run"} <= roles  # emitted inside the round's flow run


def test_the_endpoints_table_is_a_prefect_table_artifact(stack: Stack) -> None:
    response = httpx.post(f"{stack.api}/artifacts/filter",
                          json={"artifacts": {"key": {"any_": ["endpoints-acme-ops-model"]}}}, timeout=10)
    response.raise_for_status()
    artifacts = response.json()
    assert artifacts and {a["type"] for a in artifacts} == {"table"}
    newest = max(artifacts, key=lambda a: a["created"])
    rows = newest["data"] if isinstance(newest["data"], list) else json.loads(newest["data"])
    by_tag = {r["endpoint"]: r for r in rows}
    assert set(by_tag) == {"alpha", "beta", "gamma", "refuser"}
    assert by_tag["refuser"]["status"] == "fail"
    assert by_tag["refuser"]["refusal"].startswith("fail: ")
    assert by_tag["alpha"]["refusal"] == "pass"


def _admin_event(stack: Stack, name: str, *command: str) -> dict[str, Any]:
    """Run an admin command (the console script, PREFECT_API_URL set, as ops-on-call); the one event `name` it
    emitted, from the server's feed."""
    out = subprocess.run([str(BIN / "canary"), *command, "--config", str(stack.config)], cwd=REPO,
                         env={**stack.env, "USER": "ops-on-call"}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    deadline = time.monotonic() + 30
    while not (events := _events(stack.api, name, stack.started - timedelta(minutes=5))):
        assert time.monotonic() < deadline, f"no {name} event in the server's feed"
        time.sleep(1)
    (event,) = events
    return event


def test_a_lift_by_hand_is_an_event_too(stack: Stack) -> None:
    """`canary lift` (the console script, PREFECT_API_URL set): `canary.endpoint.lifted` with who and why.
    Runs last: it ends the suspension the tests above look at."""
    event = _admin_event(stack, "canary.endpoint.lifted", "lift", "refuser", "--reason", "provider fixed it")
    assert event["resource"]["prefect.resource.id"] == f"canary.endpoint.{MODEL}.refuser"
    assert event["payload"]["reason"].endswith("provider fixed it") or "provider fixed it" in str(event["payload"])


def test_a_mode_switch_is_an_event(stack: Stack) -> None:
    """`canary mode observe` (PREFECT_API_URL set): `canary.mode.switched` with who, the modes and the releases."""
    event = _admin_event(stack, "canary.mode.switched", "mode", "observe")
    assert event["resource"]["prefect.resource.id"] == "canary.mode"
    assert {k: event["payload"][k] for k in ("mode", "previous", "who", "models")} == {
        "mode": "observe", "previous": "enforce", "who": "ops-on-call", "models": [MODEL]}


# -- the router, and the dashboard's queries ---------------------------------------------------------------------

# -- an automation that acts, on a real crash ---------------------------------------------------------------------

def test_a_sigkilled_cycle_runs_again_once_per_window(stack: Stack) -> None:
    """`canary serve` (its own database): the cycle's process SIGKILLed mid-round is a Crashed flow run; the
    deployment's trigger runs the cycle again (`prefect.automation.action.executed`), the new run completes and
    its round marks the dead one crashed; a second crash within the trigger's window runs nothing more."""
    t0 = time.monotonic()
    db = stack.tmp / "serve" / "canary.duckdb"
    db.parent.mkdir()
    config = stack.tmp / "serve" / "canary.toml"
    config.write_text(
        f'models = ["{SERVED}"]\nmode = "enforce"\nbase_url = "{stack.sim_url}"\ndb_path = "{db}"\n'
        f'publish_dir = "{db.parent / "published"}"\nexclusions_file = "{NO_EXCLUSIONS}"\n'
        'languages = ["en"]\nttft_s = 30\nfail_rounds = 2\n', encoding="utf-8")
    env = {**stack.env, "PREFECT_RUNNER_POLL_FREQUENCY": "2", "CANARY_SERVE_INTERVAL_S": "86400",
           "PREFECT_HOME": str(stack.tmp / "serve-home")}
    logs = [stack.tmp / "serve.log"]
    serve = start([str(BIN / "canary"), "serve", "--config", str(config)], env, logs[0])
    since = datetime.now(UTC) - timedelta(minutes=1)
    try:
        with httpx.Client(base_url=stack.api, timeout=10) as api:
            def cycle_deployment() -> dict[str, Any] | None:
                found = [d for d in api.post("/deployments/filter", json={}).json() if d["name"] == "canary-cycle"]
                return found[0] if found else None

            deployment = wait_for("the served canary-cycle deployment", cycle_deployment, 120, logs)
            owned = wait_for("the deployment's automation", lambda: [
                a for a in api.post("/automations/filter", json={}).json() if a["name"] == "canary-cycle-crashed"],
                60, logs)
            assert [(a["actions"][0]["type"], a["actions"][0]["source"], a["actions"][0]["deployment_id"])
                    for a in owned] == [("run-deployment", "selected", deployment["id"])], owned
            automation_trail: Any = EventTrail(stack.api, since)  # what the server saw, printed if a wait times out

            def executed() -> list[dict[str, Any]]:
                # by name: `canary serve` applies the deployment twice (its start-up cycle, then `serve`), and each
                # apply replaces the deployment's automations, so the id read above may be gone already
                return [e for e in _events(stack.api, "prefect.automation.action.executed", since)
                        if e["resource"].get("prefect.resource.name") == "canary-cycle-crashed"]

            # the first run to kill is serve's own start-up cycle (its database has no round yet)
            killed = kill_the_running_cycle(db, set(), logs)
            wait_for("the killed cycle's run Crashed", lambda: api.get(f"/flow_runs/{killed}").json()["state_type"]
                  == "CRASHED", 60, logs)
            (action,) = wait_for("prefect.automation.action.executed", executed, 90, logs + [automation_trail])
            (rerun,) = [r["prefect.resource.id"].removeprefix("prefect.flow-run.") for r in action["related"]
                        if r["prefect.resource.id"].startswith("prefect.flow-run.")]
            assert rerun != killed
            wait_for("the automation's cycle run Completed", lambda: api.get(f"/flow_runs/{rerun}").json()["state_type"]
                  == "COMPLETED", 180, logs)
            crashed = wait_for("canary.round.crashed from the new run's round",
                            lambda: _events(stack.api, "canary.round.crashed", since), 30, logs)
            assert {e["resource"]["prefect.resource.id"] for e in crashed} == {f"canary.model.{SERVED}"}

            # the crash-loop guard: a second crash inside the trigger's window runs nothing more
            run_now(api, deployment["id"], logs)
            again = kill_the_running_cycle(db, {killed, rerun}, logs)
            wait_for("the second killed run Crashed", lambda: api.get(f"/flow_runs/{again}").json()["state_type"]
                  == "CRASHED", 60, logs)
            time.sleep(15)  # the first reaction took seconds: give the second as long, and more
            assert len(executed()) == 1
            runs = api.post("/flow_runs/filter", json={
                "deployments": {"id": {"any_": [deployment["id"]]}}}).json()
            soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
            ran = [r for r in runs if r["state_type"] != "SCHEDULED" or r["expected_start_time"] < soon]
            assert sorted(r["id"] for r in ran) == sorted([killed, rerun, again]), [
                (r["name"], r["state_type"], r["expected_start_time"]) for r in runs]  # the daily schedule's aside
    finally:
        stop(serve)
    with store.open_store(db, read_only=True) as con:
        ended = dict(con.execute("SELECT status, count(*) FROM round_ends GROUP BY status").fetchall())
    assert ended.get("crashed", 0) >= 1 and ended.get("complete", 0) >= 1  # the ledger canary_rounds_total reads
    print(f"crash e2e: {time.monotonic() - t0:.1f} s")
