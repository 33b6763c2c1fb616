"""Two cycles of one database never overlap, and a dead one does not hold the next one back (`canary run` as a user
runs it: the installed console script in subprocesses, the loopback simulator with a slow endpoint).

* Without PREFECT_API_URL each `canary run` starts its own private Prefect server, so the Prefect slots are not
  shared: the file lock beside the database makes the second run wait for the first (it says so), its round's
  time is read once it has the lock (its own round id, after the first round ended), and neither round is marked
  `crashed` by the other.
* With a real Prefect server, a `canary run` killed (SIGKILL, a failpoint) in the middle of its round leaves its
  cycle slot under a 300 s lease and its rounds' slots under theirs: the next run releases them at once (the lock
  file names the dead cycle and its leases) and starts without waiting; the dead cycle's and round's flow runs are
  marked Crashed by Prefect's zombie-run automation when their heartbeats stop (tasks/orchestration/zombie_runs.py), not
  by the next run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.orchestration.cycle_lock import lock_path
from tasks.runtime.failpoints import ENV
from tests.support.run_config import write_run_config

pytestmark = pytest.mark.e2e

MODEL = "acme/overlap-model"
CANARY = str(Path(sys.executable).with_name("canary"))
FLEET = parse_fleet({"models": [{"id": MODEL, "endpoints": [
    {"tag": "alpha", "provider_name": "Alpha"},
    {"tag": "beta", "provider_name": "Beta"},
    {"tag": "slow", "provider_name": "Slow", "faults": [{"kind": "slow_first_token", "delay_s": 3.0,
                                                         "keepalive_s": 0.5}]},
]}]})


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


def write_config(sim: SimulatorHandle, where: Path, db: Path) -> Path:
    return write_run_config(sim, where, db, MODEL, ttft_s=6)


def env_for(sim: SimulatorHandle, tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_", "PREFECT_PROFILE"))}
    env.update(OPENROUTER_API_KEY=sim.api_key, TMPDIR=str(tmp), PREFECT_LOGGING_LEVEL="INFO", **extra)
    return env


def lock_holder(db: Path) -> dict[str, Any] | None:
    """The record the cycle holding `<db>.cycle.lock` wrote (pid, host, its flow run), None before one did."""
    try:
        record = json.loads(lock_path(db).read_text() or "null")
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("flow_run_id") else None


def wait_for(what: str, check: Callable[[], bool], procs: list[subprocess.Popen[str]], logs: list[Path]) -> None:
    """Poll `check` until true; fail (with every run's log) when a run exits first or after 300 s."""
    deadline = time.monotonic() + 300
    while not check():
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            pytest.fail(f"{what}: not seen\n" + "\n".join(f"--- {x.name}\n{x.read_text()[-3000:]}" for x in logs))
        time.sleep(0.1)


@pytest.mark.timeout(900)  # two whole `canary run`s, one after the other: minutes on a loaded 2-core machine
def test_two_runs_without_an_api_take_turns_and_crash_nothing(sim: SimulatorHandle, tmp_path: Path) -> None:
    """Two runs started together, as two cron jobs would be. The one that takes the cycle lock first (its record
    names it) is held there (SIGSTOP) until the other says it waits for it: the two always overlap, whatever the
    machine's load. The second round's time is read once its run has the lock, so it comes after the first
    round ended: two round ids, even when both runs start in one second."""
    db = tmp_path / "c.duckdb"
    order, outs, errs = _two_runs_one_held_until_the_other_waits(sim, tmp_path, db)
    assert ["Waiting for the previous cycle" in e for e in errs] == [False, True], [e[-2000:] for e in errs]
    with store.open_store(db, read_only=True) as con:
        rounds = con.execute(
            "SELECT r.round_id, r.status, r.round_ts, min(a.started_at), r.finished_at FROM rounds r"
            " JOIN attempts a USING (round_id) WHERE r.model = ? GROUP BY ALL ORDER BY r.round_ts", [MODEL]).fetchall()
    # both rounds landed (a deferred one, spooled on a busy file, would be missing: its run's stderr says why)
    assert [r[1] for r in rounds] == ["complete", "complete"], (rounds, [e[-3000:] for e in errs])
    (first_id, _, _, _, first_end), (second_id, _, second_ts, second_probe, _) = rounds
    assert first_id != second_id
    assert first_end <= second_ts <= second_probe, rounds  # its time read after the lock; one after the other
    said = [[ln.split(": ", 1)[0] for ln in outs[i].read_text().splitlines() if ln.startswith(f"{MODEL}@")]
            for i in order]  # (before it: the private server's progress lines)
    assert said == [[first_id], [second_id]]  # each its own round


def _two_runs_one_held_until_the_other_waits(sim: SimulatorHandle, tmp_path: Path, db: Path,
                                             ) -> tuple[list[int], list[Path], list[str]]:
    """The two `canary run`s, each with its own private server; the one that takes the lock first is SIGSTOPped
    until the other says it waits. Both must exit 0. Returns the runs' order (the lock's first holder first),
    their stdout files and their stderr texts in that order."""
    cfg = write_config(sim, tmp_path, db)
    logs = [tmp_path / f"run-{i}.err" for i in range(2)]
    outs = [tmp_path / f"run-{i}.out" for i in range(2)]
    runs: list[subprocess.Popen[str]] = []
    for i in range(2):
        home = tmp_path / f"prefect-home-{i}"  # each its own private server, as two cron jobs would have
        with outs[i].open("w") as out, logs[i].open("w") as err:
            runs.append(subprocess.Popen([CANARY, "run", "--config", str(cfg)], stdout=out, stderr=err, text=True,
                                         cwd=tmp_path, env=env_for(sim, tmp_path, PREFECT_HOME=str(home))))
    try:
        wait_for("a cycle's lock record", lambda: (lock_holder(db) or {}).get("pid") in {p.pid for p in runs},
                 runs, logs)
        first = 0 if (lock_holder(db) or {}).get("pid") == runs[0].pid else 1
        order = [first, 1 - first]
        runs[first].send_signal(signal.SIGSTOP)  # it holds the lock until the other one is waiting for it
        wait_for("the other run waiting", lambda: "Waiting for the previous cycle" in logs[order[1]].read_text(),
                 [runs[order[1]]], logs)
        runs[first].send_signal(signal.SIGCONT)
        codes = [p.wait(timeout=600) for p in runs]
    finally:
        for p in runs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
    errs = [logs[i].read_text() for i in order]
    assert codes == [0, 0], [e[-2000:] for e in errs]
    return order, outs, errs


def flow_run_states(ids: list[str]) -> dict[str, str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return {i: str(client.read_flow_run(uuid.UUID(i)).state_type.value) for i in ids}


def child_runs(parent: str) -> dict[str, str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[uuid.UUID(parent)])))
    return {str(r.id): str(r.state_type.value) for r in runs}


def running_cycles_of(db: Path) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["canary-cycle"])),
            flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(
                any_=[StateType.RUNNING]))), limit=200)
    return [str(r.id) for r in runs if (r.parameters or {}).get("db_path") == str(db)]


def state_messages(ids: list[str]) -> dict[str, str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return {i: str(client.read_flow_run(uuid.UUID(i)).state.message or "") for i in ids}


#: Heartbeats of the runs of this file's test server: Prefect's minimum; the zombie-run automation's window on it.
HEARTBEAT_S, ZOMBIE_WINDOW_S = 30, 50


@pytest.mark.timeout(600)
def test_a_killed_cycle_frees_its_slots_at_once_and_prefect_marks_its_runs_crashed(
    prefect_harness: None, sim: SimulatorHandle, tmp_path: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    from tasks.orchestration.zombie_runs import MESSAGE, ensure_zombie_automation

    db = tmp_path / f"killed-{uuid.uuid4().hex[:8]}.duckdb"  # a slot of its own in the shared test server
    cfg = write_config(sim, tmp_path, db)
    api = {"PREFECT_API_URL": str(PREFECT_API_URL.value()), "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(HEARTBEAT_S)}
    automation = ensure_zombie_automation(HEARTBEAT_S, within_s=ZOMBIE_WINDOW_S)
    try:
        killed = subprocess.run([CANARY, "run", "--config", str(cfg)], capture_output=True, text=True, timeout=240,
                                cwd=tmp_path, env=env_for(sim, tmp_path, **api, **{ENV: "after-probe"}))
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        [dead_cycle] = running_cycles_of(db)
        [dead_round] = child_runs(dead_cycle)
        assert child_runs(dead_cycle) == {dead_round: "RUNNING"}

        t0 = time.monotonic()
        nxt = subprocess.run([CANARY, "run", "--config", str(cfg)], capture_output=True, text=True, timeout=150,
                             cwd=tmp_path, env=env_for(sim, tmp_path, **api))
        wall = time.monotonic() - t0
        assert nxt.returncode == 0, nxt.stderr[-3000:]
        assert "late" not in nxt.stderr and wall < 60, (wall, nxt.stderr[-3000:])  # not the 300 s lease
        assert "died holding it" in nxt.stderr and "2 slot lease(s) released" in nxt.stderr, nxt.stderr[-3000:]
        with store.open_store(db, read_only=True) as con:
            statuses = [tuple(r) for r in con.execute(
                "SELECT status, deferred FROM rounds ORDER BY round_ts").fetchall()]
        # killed after probing: its probes, kept beside its journal, are landed by the next run (late), not lost
        assert statuses == [("complete", True), ("complete", False)]

        # the server marks both Crashed once their heartbeats stopped for the window (the next run did not)
        deadline = time.monotonic() + ZOMBIE_WINDOW_S + 90
        while flow_run_states([dead_cycle, dead_round]) != {dead_cycle: "CRASHED", dead_round: "CRASHED"}:
            assert time.monotonic() < deadline, flow_run_states([dead_cycle, dead_round])
            time.sleep(2)
        assert set(state_messages([dead_cycle, dead_round]).values()) == {MESSAGE}
    finally:
        with get_client(sync_client=True) as client:  # the session's other tests run longer rounds
            client.delete_automation(uuid.UUID(automation))
