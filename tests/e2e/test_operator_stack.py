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

from simulator.fleet import parse_fleet
from simulator.server import start_simulator
from tasks import store
from tests.support.prefect_db import seed_prefect_home
from tests.support.prefect_runs import read_events
from tests.support.processes import start_logged, stop_group
from tests.support.prometheus import Prometheus, free_port, prometheus, require_binary
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = "acme/ops-model"
ROUTED = "acme/routed-model"  # the router's upstream model (the canary does not probe it)
SERVED = "acme/served-model"  # canary serve's model: rounds slow enough (6 s first tokens) to be killed mid-probe
TOKEN = "xoxb-operator-stack"
SLOW = {"kind": "slow_first_token", "delay_s": 60.0, "keepalive_s": 5.0}  # x time_scale 0.1: 6 s
FLEET = parse_fleet({"models": [
    {"id": MODEL, "endpoints": [
        {"tag": "alpha", "provider_name": "Alpha"},
        {"tag": "beta", "provider_name": "Beta"},
        {"tag": "gamma", "provider_name": "Gamma"},
        {"tag": "refuser", "provider_name": "Refuser", "faults": [{"kind": "refusal"}]},
    ]},
    {"id": ROUTED, "endpoints": [
        {"tag": "good", "provider_name": "Good"},
        {"tag": "erroring", "provider_name": "Erroring",
         "faults": [{"kind": "http_error_before_stream", "status": 503}]},
        {"tag": "dying", "provider_name": "Dying", "faults": [{"kind": "die_after_tokens", "tokens": 2}]},
    ]},
    {"id": SERVED, "endpoints": [{"tag": t, "provider_name": t.title(), "faults": [SLOW]} for t in ("one", "two")]},
]})
#: Metrics another engineer's branch adds (issue 30's router ignore-list age): a panel reading one is allowed
#: no data only while the router does not export it at all.
PENDING = ("canary_router_ignore_list_age_seconds",)


@dataclass
class Stack:
    api: str
    db: Path
    config: Path
    env: dict[str, str]
    slack: SlackServer
    started: datetime
    tmp: Path
    sim_url: str
    sim_key: str


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
                    _env(seed_prefect_home(tmp / "server-home")), server_log)
    try:
        with start_simulator(FLEET, time_scale=0.1) as sim, SlackServer(token=TOKEN) as slack:
            db = tmp / "canary.duckdb"
            config = tmp / "canary.toml"
            config.write_text(
                f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "{sim.base_url}"\ndb_path = "{db}"\n'
                f'publish_dir = "{tmp / "published"}"\nexclusions_file = "{tmp / "none.toml"}"\n'
                # two runs seconds apart count as two rounds only without the policy's spacing (confirm_after_min)
                'languages = ["en"]\nttft_s = 8\nfail_rounds = 2\nconfirm_after_min = 0\n', encoding="utf-8")
            env = _env(tmp / "client-home")
            env.update(PREFECT_API_URL=api, OPENROUTER_API_KEY=sim.api_key, SLACK_BOT_TOKEN=TOKEN,
                       SLACK_CHANNEL="#canary-admins", SLACK_API_URL=slack.api_url)
            _wait_http(f"{api}/health", server, server_log)
            started = datetime.now(UTC)
            for n in (1, 2):
                out = subprocess.run([str(BIN / "canary"), "run", "--config", str(config)], cwd=REPO, env=env,
                                     capture_output=True, text=True, timeout=300)
                assert out.returncode == 0, f"run {n}: {out.stderr[-3000:]}"
            yield Stack(api, db, config, env, slack, started, tmp, sim.base_url, sim.api_key)
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

    # 2. Slack: its round's message, by the outbox key (a round's decisions of a model are one message)
    assert f"decisions|{decision.round_id}" in {m.alert_key for m in stack.slack.messages}

    # 3. The metrics: `canary metrics` and a router scraped by a real Prometheus, asked in PromQL
    from prometheus_client.parser import text_string_to_metric_families

    port = free_port()
    log = stack.tmp / "metrics.log"
    exporter = _start([str(BIN / "canary"), "metrics", "--db", str(stack.db), "--config", str(stack.config),
                       "--port", str(port)], stack.env, log)
    router_port, router = _router(stack)
    try:
        _wait_http(f"http://127.0.0.1:{port}/metrics", exporter, log, timeout_s=60)
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
        _route_traffic(router_port)

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
            _every_dashboard_query_returns_data(prom, router_port)
    finally:
        _stop(exporter)
        _stop(router)

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

def _router(stack: Stack) -> tuple[int, subprocess.Popen[bytes]]:
    """`canary router` in front of the simulator's routed model: route chat (tier 1 answers 503, tier 2 serves),
    route cut (its only tier dies after two chunks: after the commit), route dead (both tiers answer 503)."""
    empty = stack.tmp / "no-exclusions.json"
    empty.write_text(json.dumps({"model": ROUTED, "ignore": [], "entries": []}), encoding="utf-8")

    def tier(tag: str) -> str:
        return (f'  [[route.tier]]\n  base_url = "{stack.sim_url}"\n  model = "{ROUTED}"\n'
                f'  api_key_env = "SIMULATOR_API_KEY"\n  ignore_file = "{empty}"\n'
                f'  provider = {{ order = ["{tag}"], allow_fallbacks = false }}\n')

    routes = stack.tmp / "routes.toml"
    routes.write_text(
        f'[router]\npublish_dir = "{stack.tmp / "published"}"\nevents_path = "{stack.tmp / "route_events.jsonl"}"\n'
        f'savings_path = "{stack.tmp / "savings.jsonl"}"\nfirst_chunk_budget_s = 5.0\n\n'
        + "".join(f'[[route]]\nmodel = "{name}"\n' + "".join(tier(t) for t in tags)
                  for name, tags in (("chat", ["erroring", "good"]), ("cut", ["dying"]),
                                     ("dead", ["erroring", "erroring"]))), encoding="utf-8")
    port = free_port()
    log = stack.tmp / "router.log"
    proc = _start([str(BIN / "canary"), "router", "--routes", str(routes), "--port", str(port)],
                  {**stack.env, "SIMULATOR_API_KEY": stack.sim_key}, log)
    _wait_http(f"http://127.0.0.1:{port}/metrics", proc, log, timeout_s=60)
    return port, proc


def _route_traffic(port: int) -> None:
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
    messages = [{"role": "user", "content": "Hello"}]
    for _ in range(3):
        text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
            model="chat", messages=messages, stream=True) if c.choices)  # type: ignore[arg-type]
        assert text
        with pytest.raises(openai.APIError):  # cut after its first chunks: the client sees the stream break
            for _ in client.chat.completions.create(model="cut", messages=messages, stream=True):  # type: ignore[arg-type]
                pass
        with pytest.raises(openai.APIStatusError):  # every tier failed: 503
            client.chat.completions.create(model="dead", messages=messages)  # type: ignore[arg-type]


def _every_dashboard_query_returns_data(prom: Prometheus, router_port: int) -> None:
    """Every panel's PromQL and the annotation's, with the model variable at All, returns data from the real
    series (the router's rates need two scrapes of the traffic: waited for)."""
    dashboard = json.loads((REPO / "ops" / "grafana" / "canary-dashboard.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for a in dashboard["annotations"]["list"]:  # valid PromQL (query() checks); data only after a change
        prom.query(a["expr"])
    router_text = httpx.get(f"http://127.0.0.1:{router_port}/metrics", timeout=10).text
    pending = [m for m in PENDING if m not in router_text]
    empty = []
    for expr in exprs:
        if any(m in expr for m in pending):
            continue
        promql = expr.replace("$model", ".*")
        if not prom.wait_for(promql, timeout_s=30):
            empty.append(expr)
    assert not empty, f"dashboard queries without data: {empty}"
    routable = prom.query(dashboard["panels"][1]["targets"][0]["expr"].replace("$model", ".*"))
    assert [r["value"][1] for r in routable] == ["3"]


# -- an automation that acts, on a real crash ---------------------------------------------------------------------

def _holder(db: Path) -> dict[str, Any] | None:
    """The cycle lock's record (tasks/cycle_lock.py) once a cycle holds it with its flow run recorded."""
    try:
        record = json.loads((db.parent / (db.name + ".cycle.lock")).read_text() or "null")
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("flow_run_id") else None


def _wait(what: str, fn: Any, timeout_s: float, logs: list[Path]) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if value := fn():
                return value
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    tails = "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-4000:] for p in logs if p.exists())
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}\n{tails}")


def _kill_the_running_cycle(db: Path, not_run: set[str], logs: list[Path]) -> str:
    """SIGKILL the process of the cycle that holds the database's lock (a flow run not in `not_run`) once its
    round's journal says it probes (its endpoints take 6 s to a first token); returns the killed flow run's id."""
    from tasks.spool import round_journals

    record = _wait("a cycle holding the lock", lambda: (r := _holder(db)) and r["flow_run_id"] not in not_run and r,
                   180, logs)
    probing = _wait("its round probing", lambda: [j for j in round_journals(str(db), SERVED, besides="",
                                                                            own_process=False)
                                                  if j.alive and j.step == "probe"], 120, logs)
    journal = json.loads(probing[0].journal.read_text(encoding="utf-8"))
    assert journal["pid"] == record["pid"], (journal, record)  # the round runs in the cycle's process
    time.sleep(1.0)
    os.kill(int(record["pid"]), signal.SIGKILL)
    return str(record["flow_run_id"])


class _Trail:
    """A stand-in log file for `_wait`'s tails: the flow-run and automation events the server received (what
    crashed, what the trigger did), read when a wait times out."""

    def __init__(self, api: str, since: datetime) -> None:
        self.api, self.since, self.name = api, since, "events"

    def exists(self) -> bool:
        return True

    def read_text(self, errors: str = "strict") -> str:
        body = {"filter": {"occurred": {"since": self.since.isoformat()}}, "limit": 50}
        try:
            reply = httpx.post(f"{self.api}/events/filter", json=body, timeout=10)
            events = reply.raise_for_status().json()["events"]
        except httpx.HTTPError as e:
            return f"(events unreadable: {e!r})"
        return "\n".join(f"{e['occurred']} {e['event']} {e['resource']['prefect.resource.id']}" for e in events
                         if "automation" in e["event"] or e["event"].startswith("prefect.flow-run."))


def _run_now(api: httpx.Client, deployment_id: str, logs: list[Path]) -> None:
    """A run of the deployment, now (the server's SQLite answers 503 while it is busy: asked again)."""
    _wait("a flow run created", lambda: api.post(f"/deployments/{deployment_id}/create_flow_run", json={})
          .status_code == 201, 60, logs)


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
        f'publish_dir = "{db.parent / "published"}"\nexclusions_file = "{stack.tmp / "none.toml"}"\n'
        'languages = ["en"]\nttft_s = 30\nfail_rounds = 2\n', encoding="utf-8")
    env = {**stack.env, "PREFECT_RUNNER_POLL_FREQUENCY": "2", "CANARY_SERVE_INTERVAL_S": "86400",
           "PREFECT_HOME": str(stack.tmp / "serve-home")}
    logs = [stack.tmp / "serve.log"]
    serve = _start([str(BIN / "canary"), "serve", "--config", str(config)], env, logs[0])
    since = datetime.now(UTC) - timedelta(minutes=1)
    try:
        with httpx.Client(base_url=stack.api, timeout=10) as api:
            def cycle_deployment() -> dict[str, Any] | None:
                found = [d for d in api.post("/deployments/filter", json={}).json() if d["name"] == "canary-cycle"]
                return found[0] if found else None

            deployment = _wait("the served canary-cycle deployment", cycle_deployment, 120, logs)
            owned = _wait("the deployment's automation", lambda: [
                a for a in api.post("/automations/filter", json={}).json() if a["name"] == "canary-cycle-crashed"],
                60, logs)
            assert [(a["actions"][0]["type"], a["actions"][0]["source"], a["actions"][0]["deployment_id"])
                    for a in owned] == [("run-deployment", "selected", deployment["id"])], owned
            automation_trail: Any = _Trail(stack.api, since)  # what the server saw, printed if a wait times out

            def executed() -> list[dict[str, Any]]:
                # by name: `canary serve` applies the deployment twice (its start-up cycle, then `serve`), and each
                # apply replaces the deployment's automations, so the id read above may be gone already
                return [e for e in _events(stack.api, "prefect.automation.action.executed", since)
                        if e["resource"].get("prefect.resource.name") == "canary-cycle-crashed"]

            # the first run to kill is serve's own start-up cycle (its database has no round yet)
            killed = _kill_the_running_cycle(db, set(), logs)
            _wait("the killed cycle's run Crashed", lambda: api.get(f"/flow_runs/{killed}").json()["state_type"]
                  == "CRASHED", 60, logs)
            (action,) = _wait("prefect.automation.action.executed", executed, 90, logs + [automation_trail])
            (rerun,) = [r["prefect.resource.id"].removeprefix("prefect.flow-run.") for r in action["related"]
                        if r["prefect.resource.id"].startswith("prefect.flow-run.")]
            assert rerun != killed
            _wait("the automation's cycle run Completed", lambda: api.get(f"/flow_runs/{rerun}").json()["state_type"]
                  == "COMPLETED", 180, logs)
            crashed = _wait("canary.round.crashed from the new run's round",
                            lambda: _events(stack.api, "canary.round.crashed", since), 30, logs)
            assert {e["resource"]["prefect.resource.id"] for e in crashed} == {f"canary.model.{SERVED}"}

            # the crash-loop guard: a second crash inside the trigger's window runs nothing more
            _run_now(api, deployment["id"], logs)
            again = _kill_the_running_cycle(db, {killed, rerun}, logs)
            _wait("the second killed run Crashed", lambda: api.get(f"/flow_runs/{again}").json()["state_type"]
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
        _stop(serve)
    with store.open_store(db, read_only=True) as con:
        ended = dict(con.execute("SELECT status, count(*) FROM round_ends GROUP BY status").fetchall())
    assert ended.get("crashed", 0) >= 1 and ended.get("complete", 0) >= 1  # the ledger canary_rounds_total reads
    print(f"crash e2e: {time.monotonic() - t0:.1f} s")
