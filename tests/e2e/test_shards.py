"""Two shards on two workers of one work pool, for real (docs/operations.md "Past one machine").

A `prefect server start` on loopback, a process work pool, `prefect deploy` of a prefect.yaml with two shard
deployments of `canary-cycle` (each its own `models` and `db_path`), two `prefect worker start --limit 1`
processes and the simulator. One cycle run per shard is started at once: both must complete, each in its own
DuckDB file, at the same time (each shard holds its own cycle slot), and the catalog must show every model of
both shards. Every process the test started is stopped at the end, with its process group and the process
groups of its children (the workers' flow-run processes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.core.plan import model_slug
from tasks.store.catalog import open_catalog
from tests.e2e.test_serve import BIN, REPO, _base_env, _free_port, _poll, _start, _stop
from tests.support import NO_EXCLUSIONS
from tests.support.prefect_db import seed_prefect_home

pytestmark = pytest.mark.e2e

SHARDS = {"shard-a": ["acme/shard-a-1", "acme/shard-a-2"], "shard-b": ["acme/shard-b-1", "acme/shard-b-2"]}
POOL = "canary-pool"
SLOW = {"kind": "slow_first_token", "delay_s": 10.0, "keepalive_s": 0.5}  # probes in flight > start jitter
FLEET = parse_fleet({"models": [{"id": m, "endpoints": [
    {"tag": "alpha", "provider_name": "Alpha", "faults": [SLOW]},
    {"tag": "beta", "provider_name": "Beta", "faults": [SLOW]},
    {"tag": "refuser", "provider_name": "Refuser", "faults": [{"kind": "refusal"}]},
]} for models in SHARDS.values() for m in models]})


def shard_prefect_yaml(config: Path, tmp: Path) -> dict[str, Any]:
    """The 2-shard layout of docs/operations.md, pointed at the test's config and files (no schedules: the
    test starts one run of each)."""
    return {
        "name": "provider-canary-shards",
        "prefect-version": "3.9.1",
        "pull": [{"prefect.deployments.steps.set_working_directory": {"directory": "{{ $CANARY_HOME }}"}}],
        "deployments": [
            {"name": f"canary-cycle-{shard}", "entrypoint": "flows/cycle.py:canary_cycle", "tags": ["canary"],
             "work_pool": {"name": POOL},
             "parameters": {"config_path": str(config), "models": models, "db_path": str(tmp / f"{shard}.duckdb")}}
            for shard, models in SHARDS.items()
        ] + [
            {"name": f"canary-deadman-{shard}", "entrypoint": "flows/deadman.py:canary_deadman", "tags": ["canary"],
             "work_pool": {"name": POOL},
             "parameters": {"config_path": str(config), "models": models, "db_path": str(tmp / f"{shard}.duckdb")}}
            for shard, models in SHARDS.items()
        ],
    }


def _children(pid: int) -> list[int]:
    """Every live descendant of `pid` (from /proc), so their process groups can be stopped too."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out.extend(kids)
        todo.extend(kids)
    return out


def _stop_tree(proc: subprocess.Popen[bytes]) -> None:
    groups = set()
    for child in _children(proc.pid):
        try:
            groups.add(os.getpgid(child))
        except ProcessLookupError:
            pass
    _stop(proc)
    for group in groups - {proc.pid}:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _api(client: httpx.Client, method: str, path: str, body: Any = None) -> Any:
    """One API call, retried on 429/502/503 the way Prefect's own client does (a busy server's SQLite
    answers 503 on a loaded machine); any other error status fails the test with the server's words."""
    for attempt in range(6):
        reply = client.request(method, path, json=body)
        if reply.status_code not in (429, 502, 503):
            break
        time.sleep(min(2.0**attempt, 8.0))
    assert reply.is_success, f"{method} {path}: {reply.status_code} {reply.text[:500]}"
    return reply.json()


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


@pytest.mark.timeout(900)
def test_two_shards_on_two_workers_run_at_once_in_their_own_files(sim: SimulatorHandle, tmp_path: Path) -> None:
    started = time.monotonic()
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    config = tmp_path / "canary.toml"
    config.write_text(  # one config for every shard; db_path is the default no shard uses
        f'models = ["acme/unused"]\nmode = "enforce"\nbase_url = "{sim.base_url}"\n'
        f'db_path = "{tmp_path / "canary.duckdb"}"\nexclusions_file = "{NO_EXCLUSIONS}"\n'
        'languages = ["en"]\nttft_s = 30\nfail_rounds = 1\n',  # SLOW's 10 s only keeps probes in flight
        encoding="utf-8",
    )
    spec = tmp_path / "prefect.yaml"
    spec.write_text(yaml.safe_dump(shard_prefect_yaml(config, tmp_path), sort_keys=False), encoding="utf-8")
    server_env = {**_base_env(seed_prefect_home(tmp_path / "prefect-server")), "PREFECT_SERVER_LOGGING_LEVEL": "INFO"}
    client_env = {**_base_env(tmp_path / "prefect-client"), "PREFECT_API_URL": api, "CANARY_HOME": str(REPO)}
    worker_env = {**client_env, "OPENROUTER_API_KEY": sim.api_key, "PREFECT_WORKER_QUERY_SECONDS": "1",
                  "PREFECT_WORKER_HEARTBEAT_SECONDS": "5"}
    logs = [tmp_path / n for n in ("server.log", "worker-1.log", "worker-2.log", "deploy.log")]
    procs = [_start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                    server_env, logs[0])]
    try:
        with httpx.Client(base_url=api, timeout=10) as client:
            _poll("the Prefect server", lambda: client.get("/health").status_code == 200, 180, procs, logs)
            from prefect.workers.process import ProcessWorker

            _api(client, "POST", "/work_pools/", {
                "name": POOL, "type": "process", "base_job_template": ProcessWorker.get_default_base_job_template(),
            })
            for n in (1, 2):
                procs.append(_start([str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--name",
                                     f"worker-{n}", "--limit", "1"], {**worker_env, "PREFECT_HOME": str(
                                         tmp_path / f"worker-{n}")}, logs[n]))
            deploy = subprocess.run([str(BIN / "prefect"), "--no-prompt", "deploy", "--all", "--prefect-file",
                                     str(spec)], cwd=REPO, env=client_env, capture_output=True, text=True,
                                    timeout=120)
            logs[3].write_text(deploy.stdout + deploy.stderr)
            assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]
            deps = {d["name"]: d for d in _api(client, "POST", "/deployments/filter", {})}
            assert set(deps) == {f"canary-{kind}-{s}" for kind in ("cycle", "deadman") for s in SHARDS}

            def workers_online() -> bool:
                found = _api(client, "POST", f"/work_pools/{POOL}/workers/filter", {})
                return sum(w["status"] == "ONLINE" for w in found) >= 2

            _poll("two online workers", workers_online, 180, procs, logs)
            t_trigger = time.monotonic()
            runs = {s: _api(client, "POST", f"/deployments/{deps[f'canary-cycle-{s}']['id']}/create_flow_run", {})
                    ["id"] for s in SHARDS}

            def finished() -> dict[str, dict[str, Any]] | None:
                now = {s: _api(client, "GET", f"/flow_runs/{rid}") for s, rid in runs.items()}
                bad = [r for r in now.values() if r["state_type"] in ("FAILED", "CRASHED", "CANCELLED")]
                if bad:
                    pytest.fail(f"a shard's cycle ended {bad[0]['state_type']}: {bad[0]['state']['message']}")
                return now if all(r["state_type"] == "COMPLETED" for r in now.values()) else None

            # ~40 s alone on 2 cores; each flow run is a fresh process (imports, detector), so under the parallel
            # suite it can take several times that: the bound is for a hang, not a speed check.
            done = _poll("both shards' cycles", finished, 420, procs, logs)
            cycles_s = time.monotonic() - t_trigger
            slots = {c["name"] for c in _api(client, "POST", "/v2/concurrency_limits/filter", {})}
    finally:
        for p in reversed(procs):
            _stop_tree(p)

    # Each worker ran one of the two runs (--limit 1 each): the shards ran on two workers.
    submitted = [logs[n].read_text().count("submitted to infrastructure") for n in (1, 2)]
    assert submitted == [1, 1], submitted
    spans = {s: (datetime.fromisoformat(r["start_time"]), datetime.fromisoformat(r["end_time"]))
             for s, r in done.items()}
    probing = {}
    for shard, models in SHARDS.items():
        db = tmp_path / f"{shard}.duckdb"
        with store.open_store(db, read_only=True) as con:
            rounds = con.execute("SELECT model, status FROM rounds ORDER BY model").fetchall()
            probing[shard] = con.execute(  # first request sent .. last reply ended
                "SELECT min(started_at), max(started_at + to_milliseconds(coalesce(total_ms, 0))) FROM attempts"
            ).fetchone()
        assert rounds == [(m, "complete") for m in models], (shard, rounds)  # its own models, in its own file
        for m in models:
            assert (tmp_path / f"{shard}-published" / f"{model_slug(m)}.json").exists()
    # The two cycles ran at the same time (a flow run starts before it waits for its slot, so the probes'
    # times are the proof): each shard holds its own cycle slot, not `canary-cycle`.
    (a0, a1), (b0, b1) = probing.values()
    assert a0 < b1 and b0 < a1, f"the shards' probes were not in flight at the same time: {probing}"
    assert {f"canary-cycle-{s}" for s in SHARDS} <= slots and "canary-cycle" not in slots, slots
    assert not (tmp_path / "canary.duckdb").exists()  # no shard wrote the config's own file

    with open_catalog([tmp_path / f"{s}.duckdb" for s in SHARDS]) as con:
        seen = con.execute("SELECT shard, model FROM v_endpoint_rounds GROUP BY ALL ORDER BY ALL").fetchall()
        listed = con.execute("SELECT shard, models, shared_models FROM catalog_shards ORDER BY shard").fetchall()
    assert seen == [(s, m) for s, models in SHARDS.items() for m in models]
    assert listed == [(s, models, []) for s, models in SHARDS.items()]
    print(f"shards e2e: {time.monotonic() - started:.1f} s (trigger to both cycles complete: {cycles_s:.1f} s; "
          f"cycles {', '.join(f'{s} {(e - b).total_seconds():.1f} s' for s, (b, e) in spans.items())}; probes "
          f"{', '.join(f'{s} {b:%H:%M:%S.%f}-{e:%H:%M:%S.%f}' for s, (b, e) in probing.items())})")


@pytest.mark.unit
def test_the_documented_shard_layout_deploys_disjoint_models_into_files_with_their_own_slots() -> None:
    """docs/operations.md 2c's prefect.yaml: per shard a cycle and a dead-man deployment with the same models
    and file, no model in two shards, parameters the flows take, and one cycle slot per shard."""
    import importlib
    import inspect
    import re

    from flows.cycle import cycle_limit_name

    doc = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    section = doc.split("## 2c. Past one machine: shards", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "no yaml example in docs/operations.md 2c"
    deployments = yaml.safe_load(block.group(1))["deployments"]
    by_shard: dict[str, dict[str, Any]] = {}
    for dep in deployments:
        kind, shard = re.fullmatch(r"canary-(cycle|deadman)-(.+)", dep["name"]).groups()  # type: ignore[union-attr]
        path, func = dep["entrypoint"].split(":")
        flow = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), func)
        assert flow.name == f"canary-{kind}"
        assert set(dep["parameters"]) <= set(inspect.signature(flow.fn).parameters), dep["name"]
        by_shard.setdefault(shard, {})[kind] = dep["parameters"]
    assert len(by_shard) == 2
    for shard, kinds in by_shard.items():
        assert kinds["cycle"]["models"] == kinds["deadman"]["models"], shard
        assert kinds["cycle"]["db_path"] == kinds["deadman"]["db_path"], shard
    models = [m for kinds in by_shard.values() for m in kinds["cycle"]["models"]]
    assert len(models) == len(set(models))
    slots = {cycle_limit_name(kinds["cycle"]["db_path"]) for kinds in by_shard.values()}
    assert slots == {"canary-cycle-shard-a", "canary-cycle-shard-b"}
