"""The probe worker process (tasks/probe/worker.py): attempts made there come back whole; a worker that dies
fails only its calls in flight and is started again; it never outlives its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.config import CanaryConfig
from tasks.core.types import Attempt, Contract, Endpoint
from tasks.probe import worker as probe_worker
from tasks.probe.loop import ProbeCall
from tasks.probe.worker import ProbeWorkerError, attempt_runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MODEL = "acme/tiny-1"
CFG = CanaryConfig(ttft_s=1.0, connect_timeout_s=2.0, read_timeout_s=5.0, probe_budget_s=8.0)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    fleet = parse_fleet({"models": [{"id": MODEL, "endpoints": [
        {"tag": "fast", "provider_name": "Fast"},
        {"tag": "slow", "provider_name": "Slow", "faults": [{"kind": "slow_first_token", "delay_s": 30}]},
    ]}]})
    with start_simulator(fleet, time_scale=0.1) as handle:
        yield handle


def call(sim: SimulatorHandle, tag: str, contract: Contract = Contract.TTFT) -> ProbeCall:
    return ProbeCall(base_url=sim.base_url, endpoint=Endpoint(model=MODEL, tag=tag, provider_name=tag.title()),
                     contract=contract, round_id="r-w", attempt_no=1, language=None, cfg=CFG, api_key=sim.api_key)


@pytest.mark.parametrize("process", ["1", "0"], ids=["worker-process", "in-thread"])
def test_an_attempt_comes_back_whole_from_either_runner(
    sim: SimulatorHandle, process: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(probe_worker.ENV, process)
    with attempt_runner() as run:
        attempt = run(call(sim, "fast", Contract.STRUCTURED))
    assert isinstance(attempt, Attempt)
    assert attempt.error_class is None, attempt.error_detail
    assert attempt.http_status == 200 and attempt.served_provider == "Fast"
    assert attempt.ttft_ms is not None and attempt.total_ms is not None and attempt.ttft_ms <= attempt.total_ms
    assert attempt.text and "sk-" not in repr(call(sim, "fast"))  # the key is not in the call's repr


def test_the_slow_start_is_measured_in_the_worker(sim: SimulatorHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(probe_worker.ENV, "1")
    with attempt_runner() as run:
        attempt = run(call(sim, "slow"))
    assert attempt.ttft_ms is not None and 2_900 <= attempt.ttft_ms < 6_000  # 30 s x 0.1


def test_a_dead_worker_fails_its_calls_in_flight_and_the_next_call_starts_a_new_one(
    sim: SimulatorHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(probe_worker.ENV, "1")
    with attempt_runner() as run, ThreadPoolExecutor(2) as pool:
        in_flight = pool.submit(run, call(sim, "slow"))  # 3 s to its first token
        time.sleep(1.0)
        old = probe_worker.worker()
        old.proc.send_signal(signal.SIGKILL)
        with pytest.raises(ProbeWorkerError, match="died"):
            in_flight.result(timeout=30)
        attempt = run(call(sim, "fast"))
    assert attempt.error_class is None and attempt.served_provider == "Fast"
    assert probe_worker.worker().proc.pid != old.proc.pid


def test_the_worker_exits_when_its_parent_is_killed() -> None:
    script = textwrap.dedent("""
        import sys, time
        from tasks.probe import worker as probe_worker
        probe_worker.start()
        print(probe_worker.worker().proc.pid, flush=True)
        time.sleep(120)
    """)
    env = {**os.environ, probe_worker.ENV: "1", "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    assert _alive(child_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 10
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child_pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False
