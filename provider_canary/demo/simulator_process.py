"""The history's runtime: a simulator in a child process on a shared step clock, and Prefect settings for
back-to-back flow runs (provider_canary/demo/history.py builds the history; this module only runs things fast).

Why a child process: in the flow's process the simulator competes for the GIL with Prefect's threads, which
inflated healthy TTFTs from milliseconds to ~0.8 s and made the TTFT contract fail at random. The child
reads the parent's `SharedStepClock` through an 8-byte memory-mapped file, so fault windows follow the
simulated time of the rounds.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tasks.errors import CanaryError
from tasks.runtime.clock import StepClock


class SharedStepClock(StepClock):
    """A StepClock mirrored into an 8-byte memory-mapped file, so a simulator in a child process reads it."""

    def __init__(self, start: datetime, path: Path) -> None:
        super().__init__(start)
        self.path = path
        path.write_bytes(struct.pack("<d", start.timestamp()))
        self._fh = path.open("r+b")
        self._map = mmap.mmap(self._fh.fileno(), 8)

    def advance(self, delta: timedelta) -> datetime:
        now = super().advance(delta)
        struct.pack_into("<d", self._map, 0, now.timestamp())
        return now

    def close(self) -> None:
        self._map.close()
        self._fh.close()
        self.path.unlink(missing_ok=True)


class SimulatorChild:
    """The parent's handle on a simulator child process: its address, and a reset of its fault counters."""

    def __init__(self, base_url: str, api_key: str, proc: subprocess.Popen[str]) -> None:
        self.base_url, self.api_key, self._proc = base_url, api_key, proc

    def reset_counters(self) -> None:
        """Start every fault's deterministic rate over (the in-process handle's `set_fleet(fleet)`)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write("reset\n")
        self._proc.stdin.flush()
        if self._proc.stdout.readline().strip() != "ok":
            raise CanaryError("simulator child: reset not acknowledged")


def serve_simulator_child(fleet: str, time_scale: float, clock_file: str) -> None:
    """The child: serve the fleet on the parent's clock (`-`: real time), print the address, reset its fault
    counters on each `reset` line, stop when stdin closes. A fleet ending in .json is a fleet spec (a dict)."""
    from provider_canary.simulator.fleet_file import read_fleet
    from provider_canary.simulator.server import start_simulator

    now: Any = None
    if clock_file != "-":
        with open(clock_file, "rb") as fh:
            shared = mmap.mmap(fh.fileno(), 8, access=mmap.ACCESS_READ)

        def now() -> datetime:
            return datetime.fromtimestamp(struct.unpack_from("<d", shared, 0)[0], UTC)

    try:
        spec: Any = read_fleet(json.loads(Path(fleet).read_text(encoding="utf-8"))) if fleet.endswith(".json") \
            else fleet
        sim = start_simulator(spec, time_scale=time_scale, now=now)
    except Exception as exc:  # a bad fleet file: one line for the parent
        print(f"error {exc}", flush=True)
        return
    with sim:
        print(f"ok {sim.base_url} {sim.api_key}", flush=True)
        for line in sys.stdin:
            if line.strip() == "reset":
                sim.set_fleet(sim.fleet)
                print("ok", flush=True)


@contextmanager
def simulator_process(
    fleet: str | Path | Mapping[str, Any], *, time_scale: float, clock: SharedStepClock | None = None
) -> Iterator[SimulatorChild]:
    """The simulator in a child process (`python -m provider_canary.demo.simulator_process`), its fault windows on
    `clock` (None: real time). `fleet`: a fleet file, or a fleet spec (the dict
    `provider_canary.simulator.fleet_file.read_fleet` reads).

    In the process running rounds, the simulator would compete for the GIL with Prefect's threads: healthy
    first tokens then arrive late, and a loaded machine turns them into TTFT failures."""
    spec_file: Path | None = None
    if isinstance(fleet, Mapping):
        import tempfile

        fd, name = tempfile.mkstemp(prefix="canary-fleet-", suffix=".json")
        os.close(fd)
        spec_file = Path(name)
        spec_file.write_text(json.dumps(fleet), encoding="utf-8")
        fleet = spec_file
    clock_arg = str(clock.path) if clock is not None else "-"
    cmd = [sys.executable, "-m", "provider_canary.demo.simulator_process", str(fleet), repr(time_scale), clock_arg]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        kind, _, rest = proc.stdout.readline().strip().partition(" ")
        if kind != "ok":
            raise CanaryError(f"history: simulator: {rest or 'the process exited at start'}")
        base_url, api_key = rest.split(" ", 1)
        yield SimulatorChild(base_url, api_key, proc)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if spec_file is not None:
            spec_file.unlink(missing_ok=True)


def _one_cert_bundle() -> Path:
    import re
    import tempfile

    import certifi

    path = Path(tempfile.gettempdir()) / "canary-history-one-ca.pem"
    if not path.exists():
        pem = Path(certifi.where()).read_text(encoding="ascii")
        first = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n", pem, re.S)
        part = path.with_name(f"{path.name}.{os.getpid()}")  # whole or absent: other processes may read it now
        part.write_text(first.group(0) if first else pem, encoding="ascii")
        os.replace(part, path)
    return path


@contextmanager
def history_prefect(lean: bool = True) -> Iterator[None]:
    """The Prefect settings of a history: its own private server, and (lean) no per-run waste.

    Always: the flow runs go to a private server of this process that dies with it (tasks/prefect_api/server.py),
    never to PREFECT_API_URL (hundreds of simulated runs do not belong in a real deployment's UI, and Slack
    secret blocks there must not fire).
    Lean (the flow code itself is untouched; each item measured, see benchmarks/bench_history.py):

    * no flow-run heartbeats: the engine joins its heartbeat thread, which sleeps in 1 s steps, at the end
      of every flow run (0-1 s per round, 0.5 s on average);
    * the private server's bookkeeping services off (tasks/prefect_api/private_server.py IDLE_SERVER_SERVICES, its
      default; not lean turns them on): their SQLite writes locked out the round's own API calls (a Variable
      write took 1-3 s instead of 20 ms);
    * a one-certificate CA bundle (SSL_CERT_FILE): each round's discovery builds an httpx.Client, whose
      default SSL context loads certifi's ~150 CAs (15-25 ms of CPU under the GIL; the probe worker builds
      its one client per process, so this was ~1.5 s per round when every probe task built one). No TLS is
      spoken here: the simulator and the temporary server are plain http on 127.0.0.1 and Slack is off.
    """
    from tasks.prefect_api.private_server import IDLE_SERVER_SERVICES
    from tasks.prefect_api.server import prefect_api, settings_for_flow_runs

    env = {} if lean else {f"PREFECT_SERVER_SERVICES_{n}_ENABLED": "true" for n in IDLE_SERVER_SERVICES}
    if lean:
        env["SSL_CERT_FILE"] = str(_one_cert_bundle())
    env |= {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}  # offline (docs/design.md)
    saved = {n: os.environ.get(n) for n in env}
    os.environ.update(env)  # before the server starts: it reads the services settings from its environment
    try:
        with prefect_api(private=True) as api:
            api.wait_ready()
            with settings_for_flow_runs(api_url=api.url, heartbeats=not lean):
                yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


if __name__ == "__main__":  # the simulator child of `simulator_process`
    serve_simulator_child(sys.argv[1], float(sys.argv[2]), sys.argv[3])
