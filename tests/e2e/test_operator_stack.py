"""The operator's stack end to end, as an operator runs it: a real `prefect server start`, the simulator, the
Slack double, two `canary run`s (console script, subprocesses) in which a refusing endpoint is suspended; then
`canary metrics` scraped by a real Prometheus (the `prometheus` binary on a loopback port, temp config and
storage), and the Prefect server's own event feed and artifacts.

One suspension shows in all four places: DuckDB (the decision), Slack (its alert), the metrics (a PromQL query
answers the suspended endpoints) and Prefect's event feed (`canary.endpoint.suspended` with its evidence).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from simulator.fleet import parse_fleet
from simulator.server import start_simulator
from tasks import store
from tests.support.prefect_runs import read_events
from tests.support.processes import start_logged, stop_group
from tests.support.prometheus import free_port, prometheus, require_binary
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = "acme/ops-model"
TOKEN = "xoxb-operator-stack"
FLEET = parse_fleet({"models": [{"id": MODEL, "endpoints": [
    {"tag": "alpha", "provider_name": "Alpha"},
    {"tag": "beta", "provider_name": "Beta"},
    {"tag": "gamma", "provider_name": "Gamma"},
    {"tag": "refuser", "provider_name": "Refuser", "faults": [{"kind": "refusal"}]},
]}]})


@dataclass
class Stack:
    api: str
    db: Path
    config: Path
    env: dict[str, str]
    slack: SlackServer
    started: datetime
    tmp: Path


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SLACK_", "OPENROUTER_"))}
    env.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_HOME=str(home))
    return env


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return start_logged(argv, env, log, REPO)


_stop = stop_group


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{proc.args!r} exited {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url, timeout=3).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{url} did not answer:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_binary("prometheus")  # skip (fail on CI) before anything starts
    tmp = tmp_path_factory.mktemp("operator-stack")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    server_log = tmp / "prefect-server.log"
    server = _start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                    _env(tmp / "server-home"), server_log)
    try:
        with start_simulator(FLEET, time_scale=0.1) as sim, SlackServer(token=TOKEN) as slack:
            db = tmp / "canary.duckdb"
            config = tmp / "canary.toml"
            config.write_text(
                f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "{sim.base_url}"\ndb_path = "{db}"\n'
                f'publish_dir = "{tmp / "published"}"\nexclusions_file = "{tmp / "none.toml"}"\n'
                'languages = ["en"]\nttft_s = 8\nfail_rounds = 2\n', encoding="utf-8")
            env = _env(tmp / "client-home")
            env.update(PREFECT_API_URL=api, OPENROUTER_API_KEY=sim.api_key, SLACK_BOT_TOKEN=TOKEN,
                       SLACK_CHANNEL="#canary-admins", SLACK_API_URL=slack.api_url)
            _wait_http(f"{api}/health", server, server_log)
            started = datetime.now(UTC)
            for n in (1, 2):
                out = subprocess.run([str(BIN / "canary"), "run", "--config", str(config)], cwd=REPO, env=env,
                                     capture_output=True, text=True, timeout=300)
                assert out.returncode == 0, f"run {n}: {out.stderr[-3000:]}"
            yield Stack(api, db, config, env, slack, started, tmp)
    finally:
        _stop(server)


_events = read_events


def test_a_suspension_shows_in_duckdb_slack_metrics_and_the_event_feed(stack: Stack) -> None:
    # 1. DuckDB: the decision, with its two failing rounds as evidence
    with store.open_store(stack.db, read_only=True) as con:
        suspended = [d for d in store.decisions_between(con) if d.action == "suspend"]
    assert [(d.model, d.tag) for d in suspended] == [(MODEL, "refuser")]
    decision = suspended[0]
    assert len(decision.evidence_round_ids) == 2

    # 2. Slack: its alert, by the outbox key
    assert decision.decision_id in {m.alert_key for m in stack.slack.messages}

    # 3. The metrics: `canary metrics` scraped by a real Prometheus, asked in PromQL
    from prometheus_client.parser import text_string_to_metric_families

    port = free_port()
    log = stack.tmp / "metrics.log"
    exporter = _start([str(BIN / "canary"), "metrics", "--db", str(stack.db), "--config", str(stack.config),
                       "--port", str(port)], stack.env, log)
    try:
        _wait_http(f"http://127.0.0.1:{port}/metrics", exporter, log, timeout_s=60)
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        families = {f.name: f for f in text_string_to_metric_families(text)}  # prometheus_client's own parser
        excluded = {(s.labels["endpoint"], s.labels["layer"]): s.value
                    for s in families["canary_endpoint_excluded"].samples}
        assert excluded[("refuser", "canary")] == 1 and excluded[("alpha", "canary")] == 0
        assert families["canary_routable_endpoints"].samples[0].value == 3
        rounds = {s.labels["status"]: s.value for s in families["canary_rounds"].samples}
        assert rounds == {"complete": 2}
        assert families["gen_ai_client_operation_time_to_first_chunk_seconds"].type == "histogram"

        with prometheus(stack.tmp / "prometheus", [f"127.0.0.1:{port}"]) as prom:
            result = prom.wait_for('canary_endpoint_excluded{layer="canary"} == 1')
            assert sorted(r["metric"]["endpoint"] for r in result) == ["refuser"]
            assert {r["metric"]["model"] for r in result} == {MODEL}
            firing = prom.wait_for('ALERTS{alertname="CanaryEndpointSuspended", alertstate="firing"}')
            assert [r["metric"]["endpoint"] for r in firing] == ["refuser"]
            assert prom.query('canary_probe_success{endpoint="refuser", contract="refusal"}')[0]["value"][1] == "0"
            assert prom.query('histogram_quantile(0.95, sum by (endpoint, le) '
                              '(gen_ai_client_operation_time_to_first_chunk_seconds_bucket))')
            dashboard = json.loads((REPO / "ops" / "grafana" / "canary-dashboard.json").read_text(encoding="utf-8"))
            exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
            exprs += [a["expr"] for a in dashboard["annotations"]["list"]]
            for expr in exprs:  # every panel's PromQL is valid against the real series (query() checks)
                prom.query(expr.replace("$model", ".*"))
            routable = prom.query(dashboard["panels"][0]["targets"][0]["expr"].replace("$model", ".*"))
            assert [r["value"][1] for r in routable] == ["3"]
    finally:
        _stop(exporter)

    # 4. Prefect's event feed on the real server: the decision, its resource and its evidence
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


def test_the_automation_file_is_accepted_by_a_real_server(stack: Stack) -> None:
    out = subprocess.run([str(BIN / "prefect"), "automation", "create", "--from-file",
                          str(REPO / "ops" / "prefect" / "automations.yaml")], cwd=REPO, env=stack.env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    found = httpx.post(f"{stack.api}/automations/filter", json={}, timeout=10).json()
    crashed = [a for a in found if a["name"] == "canary-round-crashed"]
    assert len(crashed) == 1
    assert sorted(crashed[0]["trigger"]["expect"]) == ["canary.round.crashed", "prefect.flow-run.Crashed"]
    assert crashed[0]["actions"][0]["type"] == "run-deployment"

    # a crashed round's event, as the next round's save emits it inside a canary-round flow run, fires it
    import asyncio
    import uuid

    from prefect.events import Event
    from prefect.events.clients import PrefectEventsClient

    from tasks.core.events import crashed_round_events

    (crash,) = crashed_round_events(MODEL, [f"round {MODEL}:dead crashed during step probe"], datetime.now(UTC))
    flow = {"prefect.resource.id": f"prefect.flow.{uuid.uuid4()}", "prefect.resource.role": "flow",
            "prefect.resource.name": "canary-round"}

    async def send() -> None:
        async with PrefectEventsClient(api_url=stack.api) as client:
            await client.emit(Event(event=crash.event, resource=dict(crash.resource), occurred=crash.occurred,
                                    payload=dict(crash.payload), related=[flow], id=crash.id))

    asyncio.run(send())
    automation = f"prefect.automation.{crashed[0]['id']}"
    deadline = time.monotonic() + 60
    while not [e for e in _events(stack.api, "prefect.automation.triggered", stack.started - timedelta(minutes=5))
               if e["resource"]["prefect.resource.id"] == automation]:
        assert time.monotonic() < deadline, "the automation did not trigger on canary.round.crashed"
        time.sleep(1)


def test_a_lift_by_hand_is_an_event_too(stack: Stack) -> None:
    """`canary lift` (the console script, PREFECT_API_URL set): `canary.endpoint.lifted` with who and why.
    Runs last: it ends the suspension the tests above look at."""
    out = subprocess.run([str(BIN / "canary"), "lift", "refuser", "--reason", "provider fixed it", "--config",
                          str(stack.config)], cwd=REPO, env={**stack.env, "USER": "ops-on-call"},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    deadline = time.monotonic() + 30
    while not (events := _events(stack.api, "canary.endpoint.lifted", stack.started - timedelta(minutes=5))):
        assert time.monotonic() < deadline, "no canary.endpoint.lifted event in the server's feed"
        time.sleep(1)
    (event,) = events
    assert event["resource"]["prefect.resource.id"] == f"canary.endpoint.{MODEL}.refuser"
    assert event["payload"]["reason"].endswith("provider fixed it") or "provider fixed it" in str(event["payload"])
