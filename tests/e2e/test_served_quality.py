"""Where the users are, served for real: a tool-schema fault is excluded before the next scheduled round, and no
client sees a masked upstream failure (issue 29's acceptance, as an operator runs it).

Every part is its own process on 127.0.0.1: `prefect server start`, the simulator (`canary simulator`, time scale
0.05), `canary serve` (its next scheduled round a week away on the anchored grid, the watcher looking every 10 s),
and `canary router` writing its live counts into the canary's database (`events_db`). Three clients use the
official `openai` client in threads, streamed and not, until the end:

* route `agent`: tier 1 pinned to alpha, tier 2 to beta, a tool-calling client (`lookup_weather`);
* route `agent-eu`: tier 1 pinned to gamma, tier 2 to beta, the same tool: alpha's **peers**. Tool traffic spread
  over a model's endpoints, as in production: the quality rule compares alpha with the judged tool calls of the
  model's other endpoints (gamma's, and beta's answers to the retried non-streamed calls), so the scenario takes
  the peer path of tasks/core/suspicion.py, not the "no peer evidence" one;
* route `chat`: tier 1 pinned to delta, tier 2 to beta, plain chat.

Timeline (wall clock):

    setup     the simulator serves the model's first full round (`canary run`), then it is started again (a new
              process on the same port) with the fault windows, F = its start + LEAD_S
    F         alpha answers every tool call with arguments missing a required key (`schema_violating_args`, a
              well-formed HTTP 200); delta answers OpenRouter's masked upstream failure (`masked_upstream_failure`:
              HTTP 200, `finish_reason: stop`, `native_finish_reason: network_error`, no content)
    F + ~40 s the watcher (once the failures outweigh the window's earlier healthy answers): alpha `live_quality`
              (class tools, clearly above its peers), delta `live_failure_rate` -> a `canary-cycle` run confirming
              them (alpha: its tools contract only): they fail
    + 1 min   the follow-up confirmation (`confirm_after_min = 1`) fails them again -> suspended, published
    after     tier 1 of `agent` and `chat` is skipped: the clients' tool calls come from beta, valid

(a) alpha is in the published ignore list (enforce mode) before the next scheduled round, by that suspicion, its
confirmation round and the follow-up; no healthy endpoint is touched. (b) no client request failed or got an
empty reply, the masked failure's included: tier 2 answered them. The wall time is printed (`-s`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tasks import store
from tasks.core.plan import model_slug
from tasks.orchestration.deployments import SCHEDULE_ANCHOR
from tests.support import NO_EXCLUSIONS
from tests.support.prefect_db import seed_prefect_home
from tests.support.processes import log_tails, poll_while_running, served_env, start_logged, stop_group
from tests.support.prometheus import free_port
from tests.support.served_clients import Reply, client_loop

# Not `timing`: no verdict rests on a latency margin (the TTFT threshold is 8 s against first tokens of
# milliseconds; every wait is a poll with a generous bound).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = "acme/served-quality"
TAGS = ("alpha", "beta", "gamma", "delta", "epsilon")  # epsilon: an endpoint the router does not use
SIM_KEY = "sk-or-v1-simulator"
#: Seconds from the simulator's second start to the faults: canary serve, the router and the clients start and
#: send healthy traffic first.
LEAD_S = 45
#: The served round interval: a week, so no scheduled round falls within the test (schedules are anchored at
#: SCHEDULE_ANCHOR: at 900 s one came on every quarter hour, and a run crossing one saw a scheduled round).
SERVE_INTERVAL_S = 7 * 24 * 3600
ROUTES = {"agent": ("alpha", "beta"), "agent-eu": ("gamma", "beta"), "chat": ("delta", "beta")}


def _iso(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


def _fleet(faults_at: datetime | None) -> str:
    """The model's endpoints; with `faults_at`, alpha's and delta's faults from then on (for an hour)."""
    window = [f'start = "{_iso(faults_at)}"', f'end = "{_iso(faults_at + timedelta(hours=1))}"'] if faults_at else []
    faults = {"alpha": 'kind = "schema_violating_args"\nmode = "missing_required"',
              "delta": 'kind = "masked_upstream_failure"\nnative = "network_error"'}
    lines = ["[[models]]", f'id = "{MODEL}"', ""]
    for tag in TAGS:
        lines += ["[[models.endpoints]]", f'tag = "{tag}"', f'provider_name = "{tag.title()}"']
        if faults_at and tag in faults:
            lines += ["[[models.endpoints.faults]]", faults[tag], "[[models.endpoints.faults.windows]]", *window]
        lines.append("")
    return "\n".join(lines)


_env = served_env


# -- the stack --------------------------------------------------------------------------------------------------

@dataclass
class Story:
    api: str
    db: Path
    faults_at: datetime
    serve_started: datetime
    excluded_at: dict[str, datetime]  # first time the published list held the tag
    replies: list[Reply]
    logs: list[Path]
    wall_s: float


def _published(path: Path) -> list[str]:
    try:
        return list(json.loads(path.read_text(encoding="utf-8"))["ignore"])
    except (OSError, ValueError, KeyError):
        return []


def _routes_toml(tmp: Path, sim_url: str, db: Path) -> Path:
    text = (f'[router]\npublish_dir = "{tmp / "published"}"\nevents_path = "{tmp / "route_events.jsonl"}"\n'
            f'savings_path = "{tmp / "savings.jsonl"}"\nevents_db = "{db}"\nfirst_chunk_budget_s = 10.0\n\n')
    for name, tiers in ROUTES.items():
        text += f'[[route]]\nmodel = "{name}"\n'
        for tag in tiers:
            text += (f'  [[route.tier]]\n  base_url = "{sim_url}"\n  model = "{MODEL}"\n'
                     '  api_key_env = "SIMULATOR_API_KEY"\n'
                     f'  provider = {{ only = ["{tag}"], allow_fallbacks = false }}\n')
    path = tmp / "routes.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    t0 = time.monotonic()
    tmp = tmp_path_factory.mktemp("served-quality")
    logs = [tmp / n for n in ("prefect-server.log", "simulator.log", "serve.log", "router.log")]
    port, sim_port = free_port(), free_port()
    api = f"http://127.0.0.1:{port}/api"
    sim_url = f"http://127.0.0.1:{sim_port}/api/v1"
    db = tmp / "canary.duckdb"
    config = tmp / "canary.toml"
    config.write_text(
        f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "{sim_url}"\ndb_path = "{db}"\n'
        f'publish_dir = "{tmp / "published"}"\nexclusions_file = "{NO_EXCLUSIONS}"\nlanguages = ["en"]\n'
        # the watcher looks every 10 s; a failed confirmation round's follow-up a minute later
        'ttft_s = 8\nsuspect_confirm_after_s = 30\nconfirm_after_min = 1\n', encoding="utf-8")
    env = _env(tmp / "client-home")
    env.update(PREFECT_API_URL=api, OPENROUTER_API_KEY=SIM_KEY, PREFECT_RUNNER_POLL_FREQUENCY="2")
    fleet = tmp / "fleet.toml"
    fleet.write_text(_fleet(None), encoding="utf-8")

    def simulator() -> Any:
        return start_logged([str(BIN / "canary"), "simulator", "--port", str(sim_port), "--fleet", str(fleet),
                             "--time-scale", "0.05"], env, logs[1], REPO)

    server_env = _env(seed_prefect_home(tmp / "server-home"))
    server_env["PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS"] = "2"
    procs = [start_logged([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                          server_env, logs[0], REPO), simulator()]
    replies: list[Reply] = []
    stop = threading.Event()
    clients: list[threading.Thread] = []
    try:
        poll_while_running("the Prefect server", lambda: httpx.get(f"{api}/health", timeout=3).status_code == 200,
                           180, procs, logs)
        poll_while_running("the simulator", lambda: httpx.get(f"{sim_url}/models", timeout=3).status_code == 200,
                           60, procs, logs)
        out = subprocess.run([str(BIN / "canary"), "run", "--config", str(config)], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]  # the model's first full round: every endpoint clean

        # the operator's upstream from now on: the same simulator, started again with the fault windows
        stop_group(procs.pop())
        faults_at = (datetime.now(UTC) + timedelta(seconds=LEAD_S)).replace(microsecond=0)
        fleet.write_text(_fleet(faults_at), encoding="utf-8")
        procs.append(simulator())
        poll_while_running("the simulator again", lambda: httpx.get(f"{sim_url}/models", timeout=3).status_code
                           == 200, 60, procs, logs)
        serve_started = datetime.now(UTC)
        procs.append(start_logged([str(BIN / "canary"), "serve", "--config", str(config)],
                                  {**env, "CANARY_SERVE_INTERVAL_S": str(SERVE_INTERVAL_S)}, logs[2], REPO))
        router_port = free_port()
        procs.append(start_logged([str(BIN / "canary"), "router", "--routes", str(_routes_toml(tmp, sim_url, db)),
                                   "--port", str(router_port)], {**env, "SIMULATOR_API_KEY": SIM_KEY}, logs[3], REPO))
        router = f"http://127.0.0.1:{router_port}"
        poll_while_running("the router", lambda: httpx.get(f"{router}/healthz", timeout=3).json()["ok"], 60, procs,
                           logs)
        for route in ROUTES:
            clients.append(threading.Thread(target=client_loop, args=(f"{router}/v1", route, replies, stop),
                                            daemon=True))
            clients[-1].start()

        published = tmp / "published" / f"{model_slug(MODEL)}.json"
        excluded_at: dict[str, datetime] = {}

        def both_excluded() -> bool:
            now = datetime.now(UTC)
            for tag in _published(published):
                excluded_at.setdefault(tag, now)
            return {"alpha", "delta"} <= set(excluded_at)

        poll_while_running("alpha and delta in the published ignore list", both_excluded, 420, procs, logs)
        time.sleep(8)  # the clients go on: their requests now skip tier 1
        stop.set()
        for thread in clients:
            thread.join(90)
        yield Story(api, db, faults_at, serve_started, excluded_at, list(replies), logs, time.monotonic() - t0)
    finally:
        stop.set()
        for proc in reversed(procs):
            stop_group(proc)


def _cycle_runs(api: str) -> list[dict[str, Any]]:
    """The runs of the `canary-cycle` deployment canary serve registered: scheduled and confirmation rounds."""
    [deployment] = [d for d in httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()
                    if d["name"] == "canary-cycle"]
    response = httpx.post(f"{api}/flow_runs/filter", timeout=10, json={
        "limit": 200, "deployments": {"id": {"any_": [deployment["id"]]}}})
    response.raise_for_status()
    return list(response.json())


def test_a_tool_schema_fault_is_excluded_before_the_next_scheduled_round(story: Story) -> None:
    excluded = story.excluded_at["alpha"]
    per_route = {r: sum(1 for x in story.replies if x.route == r) for r in ROUTES}
    last = max(x.sent for x in story.replies) - excluded.timestamp()
    print(f"\nserved quality e2e: alpha excluded {(excluded - story.faults_at).total_seconds():.0f} s after its "
          f"fault began, delta {(story.excluded_at['delta'] - story.faults_at).total_seconds():.0f} s; client "
          f"requests {per_route}, the last {last:.0f} s after alpha's exclusion; wall {story.wall_s:.0f} s")
    assert excluded > story.faults_at
    every = timedelta(seconds=SERVE_INTERVAL_S)  # the schedule's next point after serve started:
    next_round = SCHEDULE_ANCHOR + every * -((SCHEDULE_ANCHOR - story.serve_started) // every)
    assert excluded < next_round

    cycle = _cycle_runs(story.api)
    _only_confirmations_ran_before_the_next_scheduled_round(cycle, excluded)
    _alpha_suspended_on_a_confirmed_tools_suspicion(story, cycle)
    _the_agent_clients_failed_over(story, excluded)


def _only_confirmations_ran_before_the_next_scheduled_round(cycle: list[dict[str, Any]], excluded: datetime) -> None:
    ran = [r for r in cycle if r["state_type"] != "SCHEDULED"]
    assert all(r["parameters"].get("confirms") for r in ran), [(r["name"], r["parameters"]) for r in ran]
    scheduled = [datetime.fromisoformat(r["expected_start_time"]) for r in cycle
                 if r["state_type"] == "SCHEDULED" and not r["parameters"].get("confirms")]
    assert all(excluded < at for at in scheduled)  # the next scheduled round is still to come


def _alpha_suspended_on_a_confirmed_tools_suspicion(story: Story, cycle: list[dict[str, Any]]) -> None:
    """A live quality suspicion of class tools, confirmed by a round that probed tools only, suspended alpha (and
    touched no healthy endpoint); the follow-up confirmation decided."""
    with store.open_store(story.db, read_only=True, lock_timeout_s=30) as con:
        [(signal, quality, status, evidence, confirm_round)] = con.execute(
            "SELECT signal, quality, status, evidence, confirm_round_id FROM suspicions WHERE tag = 'alpha'"
        ).fetchall()
        probed = con.execute("SELECT DISTINCT contract FROM attempts WHERE round_id = ? AND tag = 'alpha'",
                             [confirm_round]).fetchall()
        decisions = con.execute("SELECT tag, action, evidence_round_ids, mode FROM decisions ORDER BY tag"
                                ).fetchall()
    assert (signal, quality, status) == ("live_quality", "tools", "confirmed")
    assert "schema_violation" in evidence and "the peers' 0%" in evidence, evidence  # gamma's, beta's answers
    assert probed == [("tools",)]  # the confirmation round probed what the class needs, nothing else
    [(_, action, evidence_rounds, mode)] = [d for d in decisions if d[0] == "alpha"]
    assert (action, mode) == ("suspend", "enforce") and evidence_rounds[0] == confirm_round
    follow_up = [r for r in cycle if r["parameters"].get("confirms") == confirm_round]
    assert follow_up and follow_up[0]["state_type"] == "COMPLETED"  # the follow-up confirmation decided
    assert {d[0] for d in decisions} <= {"alpha", "delta"}  # no healthy endpoint touched


def _the_agent_clients_failed_over(story: Story, excluded: datetime) -> None:
    """The fault reached a streamed client; the non-streamed retries, and everything after alpha's exclusion, were
    served valid calls by tier 2."""
    agent = [r for r in story.replies if r.route == "agent"]
    broken = [r for r in agent if r.stream and r.sent > story.faults_at.timestamp() + 2 and r.tier == "1"
              and not r.calls_valid()]
    assert broken, "the fault never reached a streamed client: the window did not start"
    retried = [r for r in agent if not r.stream and story.faults_at.timestamp() + 2 < r.sent < excluded.timestamp()]
    assert retried and all(r.calls_valid() and r.tier == "2" for r in retried)  # the non-streamed retry
    after = [r for r in agent if r.sent > excluded.timestamp() + 1]
    assert after and all(r.tier == "2" and r.calls_valid() for r in after), [(r.tier, r.calls) for r in after]


def test_no_client_request_fails_or_gets_an_empty_reply_during_a_masked_upstream_failure(story: Story) -> None:
    failed = [(r.route, r.stream, r.error) for r in story.replies if r.error]
    empty = [(r.route, r.stream, r.tier) for r in story.replies if r.empty and not r.error]
    assert failed == [] and empty == [], (failed, empty)
    chat = [r for r in story.replies if r.route == "chat"]
    during = [r for r in chat if story.faults_at.timestamp() + 2 < r.sent < story.excluded_at["delta"].timestamp()]
    assert during and {r.tier for r in during} == {"2"}  # tier 1 answered nothing usable: tier 2 did
    with store.open_store(story.db, read_only=True, lock_timeout_s=30) as con:
        masked = con.execute("SELECT sum(requests) FROM live_requests WHERE tag = 'delta' AND quality IS NULL "
                             "AND outcome = 'upstream_error' AND reason IN ('network_error', 'circuit_open')"
                             ).fetchone()  # a request that skipped delta's open circuit is evidence too
        [(signal, status)] = con.execute("SELECT signal, status FROM suspicions WHERE tag = 'delta'").fetchall()
    assert masked is not None and masked[0] >= 10  # counted with the upstream's own word (or circuit_open)
    assert (signal, status) == ("live_failure_rate", "confirmed")


def test_nothing_in_the_logs_is_a_traceback(story: Story) -> None:
    for log in story.logs[2:]:  # canary serve, the router
        assert "Traceback" not in log.read_text(errors="replace"), log_tails([log])
