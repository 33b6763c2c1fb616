"""The deployment an operator copies (deploy/, issue 30.5), brought up FROM ITS FILES: each service of
deploy/compose.yaml runs as a process here with the command, environment, env_file and working directory the
file gives it (tests/support/deploy_files.py parses it; tests/unit/test_deploy_files.py holds the systemd units
to the same), the way Compose would run them: named volumes are directories, service names are 127.0.0.1, each
container port a free port, the image's install is this checkout. The operator's part is done as
docs/operations.md "Production" says: canary.env filled in from canary.env.example (the simulator's key and URL
in place of OpenRouter's, a local Slack-compatible server's token and channel ID), the routes file's base URL
pointed at the simulator, its placeholder client replaced by the block `canary router keys add` prints, and
(test only, to wait one minute instead of five) `confirm_after_min = 1`.

The `postgres` service (the image's, not ours) is a throwaway PostgreSQL cluster on its socket only
(tests/support/postgres.py), with the role and database the service's environment names, its socket where the
volume postgres-run is, and the service's own healthcheck (pg_isready) run against it.

Then, in the documented install order (issue 44: it suspended within a minute): the database, the Prefect server
(until its healthcheck passes; its flow runs land in PostgreSQL), `canary serve` and its start-up cycle, then the
operator's `canary run` in the serve service (`docker compose exec canary-serve canary run ...`) seconds later:
the refusing endpoint failed both rounds, but they are closer than `confirm_after_min`, so no decision yet; the
start-up round's confirmation, a minute after it, is the second round that counts (observe mode: the refusing
endpoint "would be suspended", said in Slack by channel ID). Then the router and the exporter, a routed request
through the router with the client's key (one without it is 401; the routed one is counted in the canary's
database: events_db), and `canary status` through deploy/canary-admin (the operator's `canary` on a systemd host).
Every process is stopped by its process group at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.core.plan import model_slug
from tests.support.deploy_files import STATE, Host, Service, compose_services, dockerfile_env, read_env_file
from tests.support.postgres import PostgresCluster
from tests.support.processes import start_logged, stop_group
from tests.support.slack_server import CHANNEL_ID, SlackServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
MODEL = "meta-llama/llama-3.3-70b-instruct"  # deploy/canary.toml's model
TOKEN = "xoxb-deploy-test-token"
#: A small fleet of the deployed model: the routes file's pinned primary, another healthy endpoint, a refuser.
FLEET = parse_fleet({"models": [{"id": MODEL, "endpoints": [
    {"tag": "fireworks", "provider_name": "Fireworks"},
    {"tag": "together", "provider_name": "Together"},
    {"tag": "refuser", "provider_name": "Refuser", "faults": [{"kind": "refusal"}]},
]}]})
#: Test-only settings, on top of the files' own: the served runner looks for new runs every 2 s (not 10).
FASTER = {"PREFECT_RUNNER_POLL_FREQUENCY": "2"}
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


def operator_files(tmp: Path, sim: SimulatorHandle, slack: SlackServer) -> tuple[Path, str]:
    """deploy/ as the operator leaves it, and the client key it made: canary.env from the example with the values
    filled in, the routes file's OpenRouter base URL replaced by the simulator's, its placeholder client block
    replaced by the one `canary router keys add` printed. Everything else is the files as shipped."""
    d = tmp / "deploy"
    shutil.copytree(DEPLOY, d)
    env = read_env_file(DEPLOY / "canary.env.example")
    env.update(OPENROUTER_API_KEY=sim.api_key, OPENROUTER_BASE_URL=sim.base_url, SLACK_BOT_TOKEN=TOKEN,
               SLACK_CHANNEL=CHANNEL_ID, SLACK_API_URL=slack.api_url)
    (d / "canary.env").write_text("".join(f"{k}={v}\n" for k, v in env.items()), encoding="utf-8")
    with (d / "canary.toml").open("a", encoding="utf-8") as toml:  # top-level keys only: appending stays top-level
        toml.write("confirm_after_min = 1\n")  # the test's only setting: a confirmation 1 min after a round, not 5
    routes = (d / "routes.toml").read_text(encoding="utf-8")
    assert routes.count("https://openrouter.ai/api/v1") == 2
    added = subprocess.run([str(Path(sys.executable).with_name("canary")), "router", "keys", "add", "team-a",
                            "--routes", str(d / "routes.toml")], capture_output=True, text=True, timeout=60)
    assert added.returncode == 0 and "replace the placeholder block of team-a" in added.stderr, added.stderr
    key = next(w for w in added.stderr.split() if w.startswith("sk-canary-"))
    start = routes.index("\n[[client]]\n") + 1
    end = routes.index("\n\n", start)  # the placeholder block, as shipped
    routes = routes[:start] + added.stdout.strip() + routes[end:]
    (d / "routes.toml").write_text(routes.replace("https://openrouter.ai/api/v1", sim.base_url), encoding="utf-8")
    return d, key


def mounted_files(host: Host, services: dict[str, Service]) -> None:
    """A file a container reads (canary.toml, routes.toml) names container paths: rewrite them as the mounts of
    the service that reads it map them (once: a rewritten path is this machine's)."""
    for service in services.values():
        for source, _ in service.mounts:
            if source.startswith("./"):
                f = host.compose_dir / source
                f.write_text(host.text(f.read_text(encoding="utf-8"), service), encoding="utf-8")


def admin_script(host: Host, service: Service, tmp: Path) -> Path:
    """deploy/canary-admin (an operator's `canary` on the systemd host) on this machine: its secrets file is the
    compose env_file, its paths and the API's port as the serve service's; it runs as this test's user (runuser
    needs root and a canary user)."""
    text = (DEPLOY / "canary-admin").read_text(encoding="utf-8")
    for old, new in ((". /etc/provider-canary/canary.env\n", f". {host.compose_dir / 'canary.env'}\n"),
                     ("runuser -u canary -- ", "")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    script = tmp / "canary-admin"
    script.write_text(host.text(text, service), encoding="utf-8")
    return script


def poll(what: str, fn: Callable[[], T | None], timeout_s: float, procs: dict[str, subprocess.Popen[bytes]],
         logs: Path) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name, p in procs.items():
            if p.poll() is not None:
                pytest.fail(f"{name} exited ({p.returncode}) while waiting for {what}:\n{tails(logs)}")
        try:
            value = fn()
        except (httpx.HTTPError, OSError, ValueError):  # not up yet; a body that is not JSON is not the service's
            value = None
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}:\n{tails(logs)}")


def read_db(db: Path, sql: str, params: list[object] | None = None, tries: int = 20) -> list[tuple[object, ...]]:
    """Rows of `sql` from the canary's database, read-only; a round writing it now is waited for (0.5 s a try)."""
    for _ in range(tries - 1):
        try:
            with store.open_store(db, read_only=True) as con:
                return con.execute(sql, params or []).fetchall()
        except Exception:  # DuckDB's one-writer lock: a round holds it
            time.sleep(0.5)
    with store.open_store(db, read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def tails(logs: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2500:]}" for p in sorted(logs.glob("*.log")))


def stand_in_database(host: Host, service: Service, postgres: PostgresCluster) -> str:
    """The compose `postgres` service on this machine: its role and database in the session's cluster, the
    cluster's socket where the service's socket volume is; the healthcheck's command from PostgreSQL's binaries."""
    role, database = service.env["POSTGRES_USER"], service.env["POSTGRES_DB"]
    postgres.query("postgres", f'CREATE ROLE "{role}" LOGIN')
    postgres.query("postgres", f'CREATE DATABASE "{database}" OWNER "{role}"')
    [volume] = [source for source, at in service.mounts if at == "/var/run/postgresql"]
    (host.root / "volumes").mkdir(parents=True, exist_ok=True)
    (host.root / "volumes" / volume).symlink_to(postgres.socket_dir)  # what both containers mount
    return database


@pytest.fixture
def host_root() -> Iterator[Path]:
    """The stand-in host's root, short: PostgreSQL's socket is reached through `<root>/volumes/postgres-run/
    .s.PGSQL.5432`, and a unix socket's path holds at most 107 bytes. Under pytest's tmp_path it held 108 once the
    machine's pytest counter reached four digits (`/tmp/pytest-of-root/pytest-1001/popen-gw0/...`): pg_isready then
    never connected."""
    root = Path(tempfile.mkdtemp(prefix="deploy-", dir="/tmp" if os.path.isdir("/tmp") else None))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_compose_services_run_a_cycle_and_a_routed_request(sim: SimulatorHandle, tmp_path: Path, host_root: Path,
                                                               postgres: PostgresCluster) -> None:
    started = time.monotonic()
    with SlackServer(token=TOKEN) as slack:
        compose_dir, key = operator_files(tmp_path, sim, slack)
        services = compose_services(compose_dir / "compose.yaml")
        ports = {4200: free_port(), 8788: free_port(), 9464: free_port()}
        host = Host(root=host_root, compose_dir=compose_dir, checkout=REPO, venv=Path(sys.executable).parent.parent,
                    ports=ports, services=tuple(services))
        mounted_files(host, services)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("PREFECT_", "CANARY_", "SLACK_", "OPENROUTER_", "SIMULATOR_"))}
        base.update(dockerfile_env(compose_dir / "Dockerfile"), HOME=str(tmp_path / "home"), **FASTER)
        logs = tmp_path / "logs"
        logs.mkdir()
        procs: dict[str, subprocess.Popen[bytes]] = {}

        def start(name: str) -> tuple[list[str], dict[str, str], Path]:
            argv, env, cwd = host.process(services[name], base)
            procs[name] = start_logged(argv, env, logs / f"{name}.log", cwd)
            return argv, env, cwd

        def health(name: str) -> bool:  # the compose healthcheck's own command, as Compose runs it
            _, env, cwd = host.process(services[name], base)
            argv = host.healthcheck(services[name])
            if name == "postgres":  # the image's pg_isready: this machine's, from the cluster's binaries
                argv[0] = str(postgres.bindir / argv[0])
            check = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=30)
            return check.returncode == 0

        try:
            database = stand_in_database(host, services["postgres"], postgres)
            assert services["prefect-server"].depends_on == ("postgres",)
            poll("the database's healthcheck", lambda: health("postgres"), 60, procs, logs)
            start("prefect-server")
            assert services["canary-serve"].depends_on == ("prefect-server",)
            poll("the Prefect server's healthcheck", lambda: health("prefect-server"), 180, procs, logs)
            _, serve_env, serve_cwd = start("canary-serve")
            api = serve_env["PREFECT_API_URL"]
            assert api == f"http://127.0.0.1:{ports[4200]}/api"

            def deployed() -> bool:
                names = {d["name"] for d in httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()}
                return {"canary-cycle", "canary-deadman"} <= names

            poll("canary serve's two deployments", deployed, 180, procs, logs)

            def start_up_cycle() -> str | None:  # serve's own first cycle: the database has no round yet
                runs = httpx.post(f"{api}/flow_runs/filter", timeout=10, json={
                    "flow_runs": {"tags": {"all_": ["start-up"]}}}).json()
                states = [r["state_type"] for r in runs]
                assert not {"FAILED", "CRASHED", "CANCELLED"} & set(states), f"{runs}\n{tails(logs)}"
                return "COMPLETED" if "COMPLETED" in states else None

            poll("canary serve's start-up cycle", start_up_cycle, 300, procs, logs)
            # then the operator's cycle, as the docs have it: `docker compose exec canary-serve canary run --config ...`
            run = [str(host.venv / "bin" / "canary"), "run", "--config",
                   host.path("/etc/provider-canary/canary.toml", services["canary-serve"])]
            done = subprocess.run(run, env=serve_env, cwd=serve_cwd, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{done.stdout[-2000:]}{done.stderr[-2000:]}\n{tails(logs)}"

            db = Path(host.path(f"{STATE}/canary.duckdb", services["canary-serve"]))
            two = read_db(db, "SELECT round_ts FROM rounds ORDER BY round_ts")
            assert len(two) == 2 and two[1][0] - two[0][0] < timedelta(minutes=1), two
            assert read_db(db, "SELECT action FROM decisions") == []  # failing rounds seconds apart: no decision
            assert read_db(db, "SELECT fail_streak FROM endpoint_state WHERE tag = 'refuser'") == [(1,)]

            def decided() -> list[tuple[object, ...]] | None:  # the start-up round's confirmation, 1 min after it
                try:
                    return read_db(db, "SELECT action, tag, evidence_round_ids FROM decisions", tries=1) or None
                except Exception:  # that round holds the database now
                    return None

            [(action, tag, evidence)] = poll("the confirmation round's decision", decided, 240, procs, logs)
            assert (action, tag) == ("would_suspend", "refuser")
            spaced = read_db(db, "SELECT round_ts FROM rounds WHERE list_contains(?, round_id) ORDER BY round_ts",
                             [list(evidence)])
            assert len(spaced) == 2 and spaced[1][0] - spaced[0][0] >= timedelta(minutes=1), spaced
            assert db.is_file() and (db.parent / "published" / f"{model_slug(MODEL)}.json").is_file()
            assert not (Path(host.path(f"{STATE}/prefect-server", services["prefect-server"])) / "prefect.db").exists()
            rounds = postgres.query(database, "SELECT count(*) FROM flow_run r JOIN flow f ON f.id = r.flow_id "
                                    "WHERE f.name = 'canary-round' AND r.state_type = 'COMPLETED'")
            assert rounds == [(3,)], rounds  # the start-up cycle's, the operator's and the confirmation: in PostgreSQL

            # their ports picked now, not minutes ago: meanwhile a parallel test's connection can take a port
            # that was free then (the router then answered nothing of its own: a body that was not JSON)
            ports.update({8788: free_port(), 9464: free_port()})
            start("canary-router")
            start("canary-metrics")
            router = f"http://127.0.0.1:{ports[8788]}"
            poll("the router's /healthz", lambda: httpx.get(f"{router}/healthz", timeout=5).json()["ok"], 60, procs,
                 logs)
            ask = {"model": "chat", "messages": [{"role": "user", "content": "Hello"}]}
            anonymous = httpx.post(f"{router}/v1/chat/completions", timeout=60, json=ask)
            assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "invalid_api_key"
            reply = httpx.post(f"{router}/v1/chat/completions", timeout=60, json=ask,
                               headers={"authorization": f"Bearer {key}"})
            assert reply.status_code == 200, reply.text
            assert reply.headers["x-canary-tier"] == "1" and reply.json()["choices"][0]["message"]["content"]

            scrape = poll("canary_rounds_total from the exporter", lambda: (lambda t: t if "canary_rounds_total{" in t
                          else None)(httpx.get(f"http://127.0.0.1:{ports[9464]}/metrics", timeout=5).text), 90,
                          procs, logs)
            assert f'canary_rounds_total{{model="{MODEL}",status="complete"}} 3.0' in scrape  # with the confirmation

            def counted() -> bool:  # the router's live count, in the canary's own database (routes events_db)
                with store.open_store(db, read_only=True) as con:
                    row = con.execute("SELECT sum(requests) FROM live_requests WHERE tag = 'fireworks'").fetchone()
                return bool(row and row[0])

            poll("the routed request in live_requests", counted, 60, procs, logs)

            admin = admin_script(host, services["canary-serve"], tmp_path)
            status = subprocess.run(["sh", str(admin), "status"], env=base, capture_output=True, text=True,
                                    timeout=120)
            report = subprocess.run(["sh", str(admin), "status", "--json"], env=base, capture_output=True,
                                    text=True, timeout=120)
        finally:
            for p in reversed(list(procs.values())):
                stop_group(p)

        assert status.returncode == 0, status.stderr
        lines = status.stdout.splitlines()
        assert lines[0].startswith("mode: observe: ") and lines[2] == f"  {MODEL}: nothing"
        assert any(ln.startswith(f"  {MODEL}: refuser would be suspended until ") for ln in lines)
        rows = {r["tag"]: r for r in json.loads(report.stdout)["endpoints"]}
        assert (rows["refuser"]["policy"], rows["refuser"]["in_traffic"]) == ("would suspend", True)
        posted = [m for m in slack.messages if "would" in (m.body or {}).get("text", "").lower()]
        assert posted and all((m.body or {}).get("channel") == CHANNEL_ID for m in posted)
    print(f"deploy e2e: {time.monotonic() - started:.1f} s")
