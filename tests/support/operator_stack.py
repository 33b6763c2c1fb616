"""The operator's stack test's parts (tests/e2e/test_operator_stack.py): its fleet, the stack a module of tests shares,
the processes it starts (a logged subprocess, waited for over HTTP), `canary router` in front of the simulator with
traffic for every dashboard panel, and what the crash test waits for (the cycle lock's holder, a probing round to
SIGKILL, the server's events as the log of a wait that timed out)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from tests.support.processes import start_logged, stop_group
from tests.support.prometheus import Prometheus, free_port
from tests.support.slack_server import SlackServer

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


def stack_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SLACK_", "OPENROUTER_"))}
    env.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_HOME=str(home))
    return env


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return start_logged(argv, env, log, REPO)


stop = stop_group


def wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 180) -> None:
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


def start_router(stack: Stack) -> tuple[int, subprocess.Popen[bytes]]:
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
    proc = start([str(BIN / "canary"), "router", "--routes", str(routes), "--port", str(port)],
                  {**stack.env, "SIMULATOR_API_KEY": stack.sim_key}, log)
    wait_http(f"http://127.0.0.1:{port}/metrics", proc, log, timeout_s=60)
    return port, proc


def route_traffic(port: int) -> None:
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


def every_dashboard_query_returns_data(prom: Prometheus, router_port: int) -> None:
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


def cycle_lock_holder(db: Path) -> dict[str, Any] | None:
    """The cycle lock's record (tasks/orchestration/cycle_lock.py) once a cycle holds it with its flow run recorded."""
    try:
        record = json.loads((db.parent / (db.name + ".cycle.lock")).read_text() or "null")
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("flow_run_id") else None


def wait_for(what: str, fn: Any, timeout_s: float, logs: list[Path]) -> Any:
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


def kill_the_running_cycle(db: Path, not_run: set[str], logs: list[Path]) -> str:
    """SIGKILL the process of the cycle that holds the database's lock (a flow run not in `not_run`) once its
    round's journal says it probes (its endpoints take 6 s to a first token); returns the killed flow run's id."""
    from tasks.spool.journal import round_journals

    record = wait_for("a cycle holding the lock",
                      lambda: (r := cycle_lock_holder(db)) and r["flow_run_id"] not in not_run and r, 180, logs)
    probing = wait_for("its round probing", lambda: [j for j in round_journals(str(db), SERVED, besides="",
                                                                            own_process=False)
                                                  if j.alive and j.step == "probe"], 120, logs)
    journal = json.loads(probing[0].journal.read_text(encoding="utf-8"))
    assert journal["pid"] == record["pid"], (journal, record)  # the round runs in the cycle's process
    time.sleep(1.0)
    os.kill(int(record["pid"]), signal.SIGKILL)
    return str(record["flow_run_id"])


class EventTrail:
    """A stand-in log file for `wait_for`'s tails: the flow-run and automation events the server received (what
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


def run_now(api: httpx.Client, deployment_id: str, logs: list[Path]) -> None:
    """A run of the deployment, now (the server's SQLite answers 503 while it is busy: asked again)."""
    wait_for("a flow run created", lambda: api.post(f"/deployments/{deployment_id}/create_flow_run", json={})
          .status_code == 201, 60, logs)
