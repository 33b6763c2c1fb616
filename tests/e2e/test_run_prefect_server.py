"""`canary run`'s Prefect API, as a user runs it (the installed console script in a subprocess).

Without PREFECT_API_URL, `canary run` starts one private Prefect server (tasks/prefect_api/server.py). Before, every
run started Prefect's temporary server, which outlived a `kill -9` of its parent (~200 MB each) and printed
`CancelledError` tracebacks when a successful run shut it down. Here:

* a successful run, at Prefect's default log level, exits 0 with nothing on stderr but the INFO lines of its
  flow and task runs (no "Starting temporary server", no warning, no error, no traceback), says on stdout that
  it starts a private server and when it is ready, and leaves no process behind;
* a `kill -9` of a run whose flow run is RUNNING leaves no process of its server behind within a few seconds
  (found by OWNER_ENV in /proc/*/environ, or by the server's port in a command line);
* PREFECT_API_URL naming nothing is one line, exit 2, before anything starts.

Each run gets its own PREFECT_HOME (its own SQLite database): a killed round's slot must not reach another test,
and no other session's runs of the same model compete for its slot.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.prefect_api.private_server import OWNER_ENV
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.e2e
MODEL = "meta-llama/llama-3.3-70b-instruct"
CANARY = str(Path(sys.executable).with_name("canary"))
#: The only lines a successful run leaves on stderr: its flow's and tasks' INFO logs.
FLOW_LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} \| INFO    \| (Flow run|Task run) '")
#: How long the processes of a private server may outlive a SIGKILLed owner.
GONE_WITHIN_S = 5.0


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    """The default fleet, its delays cut tenfold."""
    with start_simulator(None, time_scale=0.1) as handle:
        yield handle


@pytest.fixture(scope="module")
def slow_sim() -> Iterator[SimulatorHandle]:
    """The default fleet at real speed: its slow endpoint keeps a round busy for 12 s or more."""
    with start_simulator(None) as handle:
        yield handle


def write_config(sim: SimulatorHandle, tmp_path: Path) -> Path:
    cfg = tmp_path / "canary.toml"
    cfg.write_text(
        f'models = ["{MODEL}"]\nbase_url = "{sim.base_url}"\ndb_path = "{tmp_path}/c.duckdb"\n'
        f'publish_dir = "{tmp_path}/published"\nexclusions_file = "{NO_EXCLUSIONS}"\n'
    )
    return cfg


def run_env(sim: SimulatorHandle, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_", "PREFECT_PROFILE"))}
    env.update(
        OPENROUTER_API_KEY=sim.api_key,
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        PREFECT_LOGGING_LEVEL="INFO",
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="90",
        TMPDIR=str(tmp_path),  # the server's log file goes here
    )
    env.update(extra)
    return env


def server_processes(owner: int, port: int | None = None) -> list[int]:
    """Pids whose environment names `owner` as their private server's owner, or whose command line has `port`."""
    marker = f"{OWNER_ENV}={owner}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:  # gone meanwhile, or not ours
            continue
        if marker in environ or (port is not None and f"--port={port}".encode() in cmdline):
            found.append(int(entry.name))
    return found


def server_port(owner: int) -> int | None:
    for pid in server_processes(owner):
        try:
            args = (Path("/proc") / str(pid) / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        for arg in args:
            if arg.startswith("--port="):
                return int(arg.removeprefix("--port="))
    return None


def running_flow_runs(port: int) -> int:
    reply = httpx.post(
        f"http://127.0.0.1:{port}/api/flow_runs/filter",
        json={"flow_runs": {"state": {"type": {"any_": ["RUNNING"]}}}},
        timeout=5,
    )
    return len(reply.json()) if reply.status_code == 200 else 0


def test_a_successful_run_prints_no_traceback_and_leaves_no_process(
    sim: SimulatorHandle, tmp_path: Path
) -> None:
    cfg = write_config(sim, tmp_path)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [CANARY, "run", "--config", str(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=run_env(sim, tmp_path),
        cwd=tmp_path,
    )
    out, err = proc.communicate(timeout=240)
    wall = time.monotonic() - t0
    assert proc.returncode == 0, err
    foreign = [ln for ln in err.splitlines() if not FLOW_LOG_LINE.match(ln)]
    assert foreign == [], err
    assert f"{MODEL}@" in out and "15 endpoints" in out, out
    # It says what it waits for before the ~10 s of the private server's start (issue 30), on stdout.
    lines = out.splitlines()
    starting = next(i for i, ln in enumerate(lines) if ln.startswith("starting a private Prefect server"))
    ready = next(i for i, ln in enumerate(lines) if re.match(r"Prefect server ready after \d+ s", ln))
    first_round = next(i for i, ln in enumerate(lines) if f"{MODEL}@" in ln)
    assert starting < ready < first_round, out
    assert server_processes(proc.pid) == []  # stopped, not left to the kernel
    assert list(tmp_path.glob("canary-prefect-server-*.log")) == []  # a clean stop removes its log
    assert list(tmp_path.glob("canary-prefect-db-*")) == []  # and its database
    print(f"canary run end to end: {wall:.1f} s")


def test_a_run_sends_no_flow_run_heartbeats(sim: SimulatorHandle, tmp_path: Path) -> None:
    """One cycle, then exit: no heartbeat thread (the engine joins it, sleeping in 1 s steps, at the end of each
    flow run: ~1.7 s of a run). Prefect's DEBUG log says when a run starts one."""
    cfg = write_config(sim, tmp_path)
    done = subprocess.run([CANARY, "run", "--config", str(cfg)], capture_output=True, text=True, timeout=240,
                          env=run_env(sim, tmp_path, PREFECT_LOGGING_LEVEL="DEBUG"), cwd=tmp_path)
    logs = done.stdout + done.stderr
    assert done.returncode == 0, logs[-3000:]
    assert "Stopping task runner" in logs  # the engine's DEBUG lines are there: the one below would be too
    assert "heartbeat context" not in logs, [ln for ln in logs.splitlines() if "heartbeat" in ln][:5]


def test_b_kill_9_of_a_run_in_progress_leaves_no_prefect_server(
    slow_sim: SimulatorHandle, tmp_path: Path
) -> None:
    cfg = write_config(slow_sim, tmp_path)
    proc = subprocess.Popen(
        [CANARY, "run", "--config", str(cfg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=run_env(slow_sim, tmp_path),
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 120
        port = None
        while time.monotonic() < deadline and proc.poll() is None:
            port = port or server_port(proc.pid)
            if port is not None:
                try:
                    if running_flow_runs(port):
                        break
                except httpx.HTTPError:
                    pass
            time.sleep(0.2)
        else:
            pytest.fail(f"no flow run RUNNING on a private server (port {port}, exit {proc.poll()})")
        assert port is not None
        before = server_processes(proc.pid, port)
        assert before, "the private server was not found by its owner marker"
        while not (workers := probe_workers(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert workers, "the run's probe worker process was not found"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        t_kill = time.monotonic()
        while (left := server_processes(proc.pid, port)) and time.monotonic() - t_kill < GONE_WITHIN_S:
            time.sleep(0.1)
        assert left == [], f"still running {time.monotonic() - t_kill:.1f} s after the kill: {left}"
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
        while (alive := [w for w in workers if _running(w)]) and time.monotonic() - t_kill < GONE_WITHIN_S:
            time.sleep(0.1)
        assert alive == [], "the probe worker outlived its round's process"
        # What the kill left on disk (the server's database) goes with the next private server's start.
        from tasks.prefect_api.private_server import _remove_stale_logs

        left_dirs = list(tmp_path.glob(f"canary-prefect-db-{proc.pid}-*"))
        assert left_dirs, "expected the killed run's server database directory"
        _remove_stale_logs(tmp_path)
        assert not any(d.exists() for d in left_dirs)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def probe_workers(parent: int) -> list[int]:
    """The probe worker processes (tasks/probe/worker.py) that `parent` started."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes()
            ppid = int((d / "stat").read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"tasks.probe.worker" in cmd and ppid == parent:
            found.append(int(d.name))
    return found


def _running(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_c_a_configured_api_that_does_not_answer_is_one_line(sim: SimulatorHandle, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/api"
    cfg = write_config(sim, tmp_path)
    t0 = time.monotonic()
    proc = subprocess.run(
        [CANARY, "run", "--config", str(cfg)],
        capture_output=True,
        text=True,
        env=run_env(sim, tmp_path, PREFECT_API_URL=url),
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"PREFECT_API_URL={url}" in lines[0] and "/health" in lines[0], lines[0]
    assert proc.stdout == ""
    assert time.monotonic() - t0 < 20  # nothing was started first (~1 s measured)


def test_d_a_configured_api_that_answers_is_used_and_nothing_is_started(
    sim: SimulatorHandle, tmp_path: Path
) -> None:
    from tasks.prefect_api.private_server import PrivatePrefectServer

    configured = PrivatePrefectServer()  # a Prefect server of the test's own, standing in for a real one
    env = run_env(sim, tmp_path, PREFECT_HOME=str(tmp_path / "configured-home"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_HOME", env["PREFECT_HOME"])
        configured.start()
    try:
        configured.wait_ready()
        cfg = write_config(sim, tmp_path)
        proc = subprocess.Popen(
            [CANARY, "run", "--config", str(cfg)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=run_env(sim, tmp_path, PREFECT_API_URL=configured.api_url),
            cwd=tmp_path,
        )
        started: list[int] = []
        while proc.poll() is None:
            started += server_processes(proc.pid)
            time.sleep(0.2)
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert started == [], "canary run started a server although PREFECT_API_URL answers"
        names = [
            r["name"]
            for r in httpx.post(f"{configured.api_url}/flow_runs/filter", json={}, timeout=10).json()
        ]
        assert any(n.startswith(f"canary-round-{MODEL}") for n in names), names
    finally:
        configured.stop()
