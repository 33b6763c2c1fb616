"""A fleet of routers on other hosts, served for real (issue 41's acceptance): live evidence through Prometheus and
the canary's lists over HTTP, nothing shared on disk.

Every part is its own process on 127.0.0.1, each router in a directory of its own: `prefect server start`, `canary
serve --metrics-port` (the exporter: metrics and `/lists`), three `canary router` processes with `lists_url` and no
`events_db` and no `publish_dir`, and a real Prometheus (Debian's package) scraping the routers and the exporter
every second. The canary reads the live traffic with `live_source = "prometheus"`. Two simulators play OpenRouter
(one for the canary's probes, one for the routers' traffic, switched together), so the routers' own requests are
counted by the upstream that serves them. Three clients (the official `openai` client), one per router, stream and
not in turn until the end; each route is tier 1 pinned to alpha, tier 2 to beta, tier 3 to gamma.

    start     canary serve's first cycle (every endpoint clean) publishes the list; the routers fetch it
    F         alpha starts answering OpenRouter's masked upstream failure (HTTP 200, no content,
              `native_finish_reason: network_error`): every router fails over to beta, the client sees nothing
    F + ~20 s the watcher reads the three routers' counters, summed, from Prometheus: alpha `live_failure_rate`
              -> a `canary-cycle` run confirming it; its pinned probes fail (`fail_rounds = 1`) -> suspended,
              published (enforce mode)
    P         the exclusion is published; each router's next poll (`lists_poll_s = 1`) takes it
    P + 15 s  from here no router sends anything to alpha: the routers' simulator counts alpha's requests

Marked `timing`: its verdicts (<= 180 s, 15 s) rest on wall time. The wall time is printed (`-s`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.core.plan import model_slug
from tests.support import NO_EXCLUSIONS
from tests.support.ports import HeldPort
from tests.support.prefect_db import seed_prefect_home
from tests.support.processes import log_tails, poll_while_running, served_env, start_logged, stop_group
from tests.support.prometheus import Prometheus, free_port, prometheus

pytestmark = [pytest.mark.e2e, pytest.mark.timing, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = "acme/fleet-model"
TAGS = ("alpha", "beta", "gamma")
SIM_KEY = "sk-or-v1-simulator"
ROUTERS = 3
#: Seconds of healthy traffic through every router before the fault: the window holds healthy evidence too.
HEALTHY_S = 10


def _fleet(faulty: bool) -> Any:
    masked = [{"kind": "masked_upstream_failure", "native": "network_error"}]
    return parse_fleet({"models": [{"id": MODEL, "endpoints": [
        {"tag": t, "provider_name": t.title(), "faults": masked if faulty and t == "alpha" else []} for t in TAGS]}]})


@dataclass
class Reply:
    router: int
    stream: bool
    sent: float
    tier: str | None = None
    error: str | None = None
    content: str = ""


def _ask(client: Any, router: int, stream: bool) -> Reply:
    reply = Reply(router, stream, time.time())
    try:
        raw = client.chat.completions.with_raw_response.create(
            model="chat", messages=[{"role": "user", "content": "Hello"}], stream=stream)
        reply.tier = raw.headers.get("x-canary-tier")
        answer = raw.parse()
        if stream:
            reply.content = "".join(c.choices[0].delta.content or "" for c in answer if c.choices)
        else:
            reply.content = answer.choices[0].message.content or ""
    except Exception as exc:  # the router failing its client
        reply.error = f"{type(exc).__name__}: {str(exc)[:200]}"
    return reply


def _client_loop(base_url: str, router: int, replies: list[Reply], stop: threading.Event) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=60)
    stream = router % 2 == 0
    while not stop.is_set():
        replies.append(_ask(client, router, stream))
        stream = not stream
        stop.wait(0.3)


def _routes_toml(directory: Path, sim_url: str, lists_url: str) -> Path:
    text = (f'[router]\nlists_url = "{lists_url}"\nlists_poll_s = 1\nfirst_chunk_budget_s = 10.0\n\n'
            '[[route]]\nmodel = "chat"\n')
    for tag in TAGS:
        text += (f'  [[route.tier]]\n  base_url = "{sim_url}"\n  model = "{MODEL}"\n'
                 f'  api_key_env = "SIMULATOR_API_KEY"\n  provider = {{ only = ["{tag}"], allow_fallbacks = false }}\n')
    directory.mkdir(parents=True)
    path = directory / "routes.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _published(path: Path) -> list[str]:
    try:
        return list(json.loads(path.read_text(encoding="utf-8"))["ignore"])
    except (OSError, ValueError, KeyError):
        return []


@dataclass
class Story:
    db: Path
    prom: Prometheus
    faults_at: float
    excluded_at: float  # when the published list first held alpha
    reached: list[float]  # per router: when its /healthz first counted the entry
    alpha_at_15s: int  # the routers' requests alpha served, counted by their upstream, at excluded_at + 15 s
    alpha_at_end: int
    replies: list[Reply]
    logs: list[Path]
    routers: list[str]
    exporter: str
    wall_s: float
    suspicion: tuple[Any, ...] = field(default=())


def _health(base: str) -> dict[str, Any]:
    return dict(httpx.get(f"{base}/healthz", timeout=5).json())


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    t0 = time.monotonic()
    tmp = tmp_path_factory.mktemp("fleet")
    api_port = free_port()
    held = [HeldPort() for _ in range(1 + ROUTERS)]  # bound until their servers start, minutes later
    exporter_port, router_ports = held[0].port, [h.port for h in held[1:]]
    api, exporter = f"http://127.0.0.1:{api_port}/api", f"http://127.0.0.1:{exporter_port}"
    logs = [tmp / "prefect-server.log", tmp / "serve.log", *[tmp / f"router-{i}.log" for i in range(ROUTERS)]]
    db, published = tmp / "canary.duckdb", tmp / "published" / f"{model_slug(MODEL)}.json"
    replies: list[Reply] = []
    stop = threading.Event()
    clients: list[threading.Thread] = []
    procs: list[subprocess.Popen[bytes]] = []
    with ExitStack() as stack:
        for h in held:
            stack.callback(h.release)
        sims: list[SimulatorHandle] = [stack.enter_context(start_simulator(_fleet(False), time_scale=0.05))
                                       for _ in range(2)]
        canary_sim, router_sim = sims
        prom = stack.enter_context(prometheus(
            tmp / "prom", [f"127.0.0.1:{p}" for p in router_ports], job="router",
            rules=["canary-rules.yml", "canary-live-rules.yml"], more_jobs={"canary": [f"127.0.0.1:{exporter_port}"]}))
        server_env = served_env(seed_prefect_home(tmp / "server-home"))
        server_env["PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS"] = "2"
        procs.append(start_logged([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
                                   str(api_port)], server_env, logs[0], REPO))
        try:
            config = tmp / "canary.toml"
            # the watcher looks every 10 s at a 60 s window; one failing round suspends; no follow-up rounds
            config.write_text(
                f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "{canary_sim.base_url}"\ndb_path = "{db}"\n'
                f'publish_dir = "{tmp / "published"}"\nexclusions_file = "{NO_EXCLUSIONS}"\nlanguages = ["en"]\n'
                'ttft_s = 8\nsuspect_confirm_after_s = 30\nsuspect_window_s = 60\nsuspect_min_requests = 10\n'
                'suspect_failure_rate = 0.25\nconfirm_after_min = 0\nfail_rounds = 1\n'
                f'live_source = "prometheus"\nprometheus_url = "{prom.base_url}"\n', encoding="utf-8")
            env = served_env(tmp / "client-home")
            env.update(PREFECT_API_URL=api, OPENROUTER_API_KEY=SIM_KEY, PREFECT_RUNNER_POLL_FREQUENCY="2")
            poll_while_running("the Prefect server", lambda: httpx.get(f"{api}/health", timeout=3).status_code == 200,
                               180, procs, logs)
            held[0].release()
            procs.append(start_logged([str(BIN / "canary"), "serve", "--config", str(config), "--metrics-port",
                                       str(exporter_port)], {**env, "CANARY_SERVE_INTERVAL_S": "3600"}, logs[1], REPO))
            poll_while_running("the first cycle's list", lambda: published.exists(), 300, procs, logs)
            routers = [f"http://127.0.0.1:{p}" for p in router_ports]
            for i, port in enumerate(router_ports):
                routes = _routes_toml(tmp / f"router-{i}", router_sim.base_url, f"{exporter}/lists")
                held[1 + i].release()
                procs.append(start_logged([str(BIN / "canary"), "router", "--routes", str(routes), "--port", str(port)],
                                          {**env, "SIMULATOR_API_KEY": SIM_KEY}, logs[2 + i], routes.parent))
            for base in routers:
                poll_while_running("a router's list", lambda b=base: _health(b)["lists"][0]["exists"], 60, procs, logs)
            for i, base in enumerate(routers):
                clients.append(threading.Thread(target=_client_loop, args=(f"{base}/v1", i, replies, stop),
                                                daemon=True))
                clients[-1].start()
            poll_while_running("the three routers' counters in Prometheus", lambda: prom.query(
                'count(count by (instance) (canary_router_live_attempts_total{tag="alpha",outcome="ok"} > 0)) == 3'),
                60, procs, logs)
            time.sleep(HEALTHY_S)

            faults_at = time.time()
            for sim in sims:
                sim.set_fleet(_fleet(True))
            poll_while_running("alpha in the published ignore list", lambda: "alpha" in _published(published), 300,
                               procs, logs)
            excluded_at = published.stat().st_mtime
            reached: list[float] = []
            for base in routers:
                poll_while_running("the exclusion at a router", lambda b=base: _health(b)["lists"][0]["entries"] == 1,
                                   30, procs, logs)
                reached.append(time.time())
            time.sleep(max(0.0, excluded_at + 15 - time.time()))
            alpha_at_15s = router_sim.fault_requests(MODEL, "alpha")
            time.sleep(6)  # the clients go on: tier 1 is skipped at every router
            alpha_at_end = router_sim.fault_requests(MODEL, "alpha")
            stop.set()
            for thread in clients:
                thread.join(90)

            def confirmed() -> tuple[Any, ...] | None:
                with store.open_store(db, read_only=True, lock_timeout_s=30) as con:
                    rows = con.execute("SELECT tag, signal, status, evidence FROM suspicions").fetchall()
                return tuple(rows) if rows and all(r[2] != "scheduled" for r in rows) else None

            suspicion = poll_while_running("the suspicion resolved", confirmed, 60, procs, logs)
            yield Story(db, prom, faults_at, excluded_at, reached, alpha_at_15s, alpha_at_end, list(replies), logs,
                        routers, exporter, time.monotonic() - t0, suspicion)
        finally:
            stop.set()
            for proc in reversed(procs):
                stop_group(proc)


def test_a_masked_failure_behind_three_routers_is_excluded_through_a_confirmed_suspicion(story: Story) -> None:
    took = story.excluded_at - story.faults_at
    last = [r - story.excluded_at for r in story.reached]
    print(f"\nfleet e2e: alpha excluded {took:.0f} s after its fault began, at every router within "
          f"{max(last):.1f} s; alpha served {story.alpha_at_15s} routed requests, none from 15 s after the "
          f"exclusion ({story.alpha_at_end - story.alpha_at_15s}); {len(story.replies)} client requests; "
          f"wall {story.wall_s:.0f} s")
    assert 0 < took <= 180, took
    [(tag, signal, status, evidence)] = story.suspicion
    assert (tag, signal, status) == ("alpha", "live_failure_rate", "confirmed"), evidence
    assert "upstream_error" in evidence  # the three routers' counts, summed by Prometheus
    with store.open_store(story.db, read_only=True, lock_timeout_s=30) as con:
        decisions = con.execute("SELECT tag, action, mode FROM decisions").fetchall()
        live = con.execute("SELECT count(*) FROM live_requests").fetchone()
    assert decisions == [("alpha", "suspend", "enforce")]
    assert live == (0,)  # nothing was written into the canary's database by a router


def test_no_router_sends_to_the_excluded_endpoint_15_s_after_it_is_published(story: Story) -> None:
    assert story.alpha_at_15s > 0, "the routers never reached alpha: the fault did not start"
    assert story.alpha_at_end == story.alpha_at_15s
    assert all(r - story.excluded_at <= 15 for r in story.reached), story.reached
    after = [r for r in story.replies if r.sent > story.excluded_at + 15]
    assert {r.router for r in after} == set(range(ROUTERS))  # every router kept serving, from tier 2
    assert {r.tier for r in after} == {"2"}


def test_no_client_request_failed(story: Story) -> None:
    failed = [(r.router, r.stream, r.error) for r in story.replies if r.error or not r.content]
    assert failed == [] and len(story.replies) > 100
    during = [r for r in story.replies if story.faults_at + 2 < r.sent < story.excluded_at]
    assert during and {r.tier for r in during} == {"2"}  # tier 1 answered nothing usable: tier 2 did


def test_the_exporter_and_prometheus_see_the_whole_fleet(story: Story) -> None:
    assert story.prom.query("canary_live_source_up{job='canary'} == 1")
    assert story.prom.query("canary_live_source_routers{job='canary'} == 3")
    [replicas] = story.prom.query("canary:router_live_replicas:count")
    assert replicas["value"][1] == "3"
    for log in story.logs[1:]:
        assert "Traceback" not in log.read_text(errors="replace"), log_tails([log])
