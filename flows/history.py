"""`canary demo --days N`: days of history from the REAL round flow over a simulated fleet, in minutes.

Every round is a real `canary-round` flow run (`flows.round.canary_round`, the code the scheduler runs),
called in a loop in this process against the temporary Prefect server (or `PREFECT_API_URL`). Rounds are
30 simulated minutes apart (48 a day) on a `StepClock`; the simulator (simulator/fleets/history.toml, faults
that come and go by simulated time) reads the same clock, so fault windows follow the history, not the
wall clock. Timings: see `HistoryResult` and benchmarks/bench_history.py.

Speed choices (measured, see the module's report in `build_history`'s output):
* The simulator runs in a child process (`simulator_process`), not in a thread of this one: in one
  process it competes for the GIL with Prefect's threads, which inflated healthy TTFTs from ms to ~0.8 s and
  made the TTFT contract fail at random.
* Delays are scaled by `time_scale` (0.05: a 12 s slow start takes 0.6 s) and so are the TTFT threshold and
  the probe budgets, so the contracts judge the same ratios as with the real defaults.
* Rounds cannot run in parallel: the policy is a fold over one model's rounds (streaks, ladder), and the
  language rotation reads the previous round. What is left per round is Prefect's per-flow-run cost.

Layers exercised on purpose: a builtin exclusion (a generated exclusions file next to the database), an
operational exclusion added and removed through `tasks.store`, another that runs out by its `until`, and
the canary's own suspensions, expiries and restores (enforce mode).
"""

from __future__ import annotations

import mmap
import os
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from flows.demo import DEMO_CONTROLS, DEMO_MODEL, _quiet
from tasks.clock import StepClock
from tasks.config import DEFAULT_LADDER, format_duration
from tasks.errors import CanaryError, ConfigError

HISTORY_FLEET = Path(__file__).resolve().parent.parent / "simulator" / "fleets" / "history.toml"
#: Day 1 of the history fleet's fault windows (simulator/fleets/history.toml).
HISTORY_START = datetime(2026, 11, 2, tzinfo=UTC)
ROUNDS_PER_DAY = 48
ROUND_INTERVAL = timedelta(minutes=30)
#: Simulated delays (and the thresholds judging them) are multiplied by this.
DEFAULT_TIME_SCALE = 0.05
#: Histories shorter than this use SHORT_LADDER so that suspensions also expire inside them.
SHORT_HISTORY_DAYS = 3.0
SHORT_LADDER = ("3h", "6h", "12h")
#: The endpoint a builtin exclusion covers in the history (its hidden filter is "already measured").
BUILTIN_TAG = "google-vertex"
SLACK_ENV = ("SLACK_BOT_TOKEN", "SLACK_CHANNEL", "SLACK_WEBHOOK_URL", "SLACK_API_URL")


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


@dataclass(frozen=True)
class SimulatorAddress:
    base_url: str
    api_key: str


def serve_simulator_child(fleet: str, time_scale: float, clock_file: str) -> None:
    """The child: serve the fleet on the parent's clock, print the address, stop when stdin closes."""
    from simulator.server import start_simulator

    with open(clock_file, "rb") as fh:
        shared = mmap.mmap(fh.fileno(), 8, access=mmap.ACCESS_READ)

    def now() -> datetime:
        return datetime.fromtimestamp(struct.unpack_from("<d", shared, 0)[0], UTC)

    try:
        sim = start_simulator(fleet, time_scale=time_scale, now=now)
    except Exception as exc:  # a bad fleet file: one line for the parent
        print(f"error {exc}", flush=True)
        return
    with sim:
        print(f"ok {sim.base_url} {sim.api_key}", flush=True)
        sys.stdin.read()


@contextmanager
def simulator_process(
    fleet: str | Path, *, time_scale: float, clock: SharedStepClock
) -> Iterator[SimulatorAddress]:
    """The simulator in a child process (`python -m flows.history`), its fault windows on `clock`."""
    cmd = [sys.executable, "-m", "flows.history", str(fleet), repr(time_scale), str(clock.path)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        kind, _, rest = proc.stdout.readline().strip().partition(" ")
        if kind != "ok":
            raise CanaryError(f"history: simulator: {rest or 'the process exited at start'}")
        base_url, api_key = rest.split(" ", 1)
        yield SimulatorAddress(base_url, api_key)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


#: Temporary-server services a history never needs; with them on, their SQLite writes lock out the round's
#: own API calls (a Variable write measured 1-3 s instead of 20 ms).
IDLE_SERVER_SERVICES = (
    "EVENT_PERSISTER",
    "TASK_RUN_RECORDER",
    "TRIGGERS",
    "SCHEDULER",
    "LATE_RUNS",
    "FOREMAN",
    "REPOSSESSOR",
    "PAUSE_EXPIRATIONS",
    "CANCELLATION_CLEANUP",
    "CLEANUP_RECONCILER",
)


def _one_cert_bundle() -> Path:
    import re
    import tempfile

    import certifi

    path = Path(tempfile.gettempdir()) / "canary-history-one-ca.pem"
    if not path.exists():
        pem = Path(certifi.where()).read_text(encoding="ascii")
        first = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n", pem, re.S)
        path.write_text(first.group(0) if first else pem, encoding="ascii")
    return path


@contextmanager
def history_prefect(lean: bool = True) -> Iterator[None]:
    """The Prefect settings of a history: its own temporary server, and (lean) no per-run waste.

    Always: the flow runs go to a temporary server of this process, never to PREFECT_API_URL (hundreds of
    simulated runs do not belong in a real deployment's UI, and Slack secret blocks there must not fire).
    Lean (the flow code itself is untouched; each item measured, see benchmarks/bench_history.py):

    * no flow-run heartbeats: the engine joins its heartbeat thread, which sleeps in 1 s steps, at the end
      of every flow run (0-1 s per round, 0.5 s on average);
    * the temporary server's bookkeeping services off (IDLE_SERVER_SERVICES): their SQLite writes locked
      out the round's own API calls (a Variable write took 1-3 s instead of 20 ms). Flow and task runs,
      artifacts, variables and concurrency limits keep working; only the event history is not kept;
    * a one-certificate CA bundle (SSL_CERT_FILE): every probe task builds an httpx.Client, whose default
      SSL context loads certifi's ~150 CAs (15-25 ms of CPU under the GIL, ~1.5 s per round of 66 probes,
      inflating the TTFTs measured meanwhile). No TLS is spoken here: the simulator and the temporary server
      are plain http on 127.0.0.1 and Slack is off.
    """
    from prefect.context import SettingsContext
    from prefect.settings import get_current_settings

    env = {f"PREFECT_SERVER_SERVICES_{n}_ENABLED": "false" for n in IDLE_SERVER_SERVICES} if lean else {}
    if lean:
        env["SSL_CERT_FILE"] = str(_one_cert_bundle())
    saved = {n: os.environ.get(n) for n in env}
    os.environ.update(env)
    current = get_current_settings()
    update: dict[str, Any] = {"api": current.api.model_copy(update={"url": None})}
    if lean:
        update["flows"] = current.flows.model_copy(update={"heartbeat_frequency": None})
    ctx = SettingsContext.get()
    assert ctx is not None
    try:
        with SettingsContext(profile=ctx.profile, settings=current.model_copy(update=update)):
            yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


@dataclass(frozen=True)
class AdminEvent:
    """An admin change applied before round `round_no` (0-based), at that round's time."""

    round_no: int
    action: str  # "add" | "remove"
    tag: str
    reason: str
    who: str = "oncall@example.com"
    until_rounds: int | None = None  # "add": runs out by itself after this many rounds


def admin_schedule(rounds: int) -> list[AdminEvent]:
    """The operational layer's story, proportional to the history's length (pure)."""
    if rounds < 8:
        return []
    add_at, remove_at = rounds // 4, (rounds * 3) // 5
    expiring_at = (rounds * 2) // 5
    return [
        AdminEvent(add_at, "add", "chutes/bf16", "streams cut after a few tokens; waiting on Chutes support"),
        AdminEvent(
            expiring_at,
            "add",
            "groq",
            "429 storm at peak hours; retry after their capacity change",
            until_rounds=max(2, rounds // 10),
        ),
        AdminEvent(remove_at, "remove", "chutes/bf16", "Chutes confirmed the fix"),
    ]


def builtin_file_text(model: str) -> str:
    return (
        "# Builtin layer of the simulated history (generated by flows/history.py).\n"
        "[[exclusion]]\n"
        f'tag = "{BUILTIN_TAG}"\n'
        f'model = "{model}"\n'
        'reason = "hidden content filter ends supported roleplay (finish_reason content_filter)"\n'
        'evidence = "history fleet: google-vertex content_filter on every text reply"\n'
        'date = "2026-11-01"\n'
    )


def history_overrides(
    base_url: str,
    db_path: str,
    *,
    time_scale: float,
    ladder: Sequence[str],
    exclusions_file: str,
    publish_dir: str,
) -> dict[str, Any]:
    """The round's config: enforce mode, thresholds scaled like the simulator's delays."""
    return {
        "base_url": base_url,
        "db_path": db_path,
        "publish_dir": publish_dir,
        "exclusions_file": exclusions_file,
        "mode": "enforce",
        "refusal_controls": list(DEMO_CONTROLS),
        "models": [DEMO_MODEL],
        "ttft_s": round(10.0 * time_scale, 4),
        "read_timeout_s": max(30.0 * time_scale, 2.0),
        "probe_budget_s": max(60.0 * time_scale, 5.0),
        "connect_timeout_s": 5.0,
        "ladder": list(ladder),
    }


def config_file_text(overrides: dict[str, Any]) -> str:
    """A canary.toml for the history's database (so `canary at/status --config` see the builtin layer)."""
    keys = ("models", "mode", "db_path", "exclusions_file", "refusal_controls", "ttft_s", "ladder")
    lines = ["# canary.toml of a simulated history (generated by flows/history.py)"]
    for key in keys:
        value = overrides[key]
        if isinstance(value, list):
            lines.append(f"{key} = [{', '.join(repr(str(v)).replace(chr(39), chr(34)) for v in value)}]")
        elif isinstance(value, str):
            lines.append(f'{key} = "{value}"')
        else:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class HistoryResult:
    db_path: str
    config_path: str
    rounds: int
    start: datetime
    end: datetime
    wall_s: float
    round_wall_s: tuple[float, ...]
    db_bytes: int

    @property
    def rounds_per_s(self) -> float:
        return self.rounds / self.wall_s if self.wall_s else 0.0


def apply_admin_event(db_path: str, ev: AdminEvent, model: str, at: datetime) -> None:
    from tasks import store
    from tasks.types import OperationalExclusion

    with store.open_store(db_path) as con:
        if ev.action == "add":
            until = at + ev.until_rounds * ROUND_INTERVAL if ev.until_rounds else None
            store.add_exclusion(con, OperationalExclusion(ev.tag, ev.reason, ev.who, at, model, until))
        else:
            store.remove_exclusion(con, ev.tag, model, ev.who, ev.reason, at)


def _fresh(db_path: Path) -> None:
    from tasks.store import snapshot_path

    for stale in (db_path, Path(f"{db_path}.wal"), snapshot_path(db_path)):
        stale.unlink(missing_ok=True)


def build_history(
    days: float,
    db_path: str,
    *,
    start: datetime = HISTORY_START,
    fleet: str | Path = HISTORY_FLEET,
    time_scale: float = DEFAULT_TIME_SCALE,
    ladder: Sequence[str] | None = None,
    extra_overrides: dict[str, Any] | None = None,
    progress: bool = True,
    lean: bool = True,
    out: TextIO | None = None,
    on_round: Callable[[int, dict[str, Any]], None] | None = None,
) -> HistoryResult:
    """Run `days` x 48 real rounds over the simulated fleet into a fresh `db_path`; return timings.

    `ladder`: suspension lengths; default the configured ladder (1d, 3d, 7d), or SHORT_LADDER for a
    history shorter than SHORT_HISTORY_DAYS. Writes `<stem>.exclusions.toml` and `<stem>.canary.toml` next
    to the database (the builtin layer and a config for `canary at/status --config`).
    """
    rounds = int(round(days * ROUNDS_PER_DAY))
    if rounds < 1:
        raise ConfigError(f"demo: --days must give at least one round of 30 minutes (got {days:g})")
    if start.tzinfo is None:
        raise ConfigError("demo: the history start must be timezone-aware")
    stream = out or sys.stdout
    _quiet()
    from flows.round import canary_round
    from tasks import store

    db = Path(db_path)
    db.parent.mkdir(parents=True, exist_ok=True)
    _fresh(db)
    stem = str(db.with_suffix("")) if db.suffix == ".duckdb" else str(db)
    exclusions_file, config_path = f"{stem}.exclusions.toml", f"{stem}.canary.toml"
    Path(exclusions_file).write_text(builtin_file_text(DEMO_MODEL), encoding="utf-8")
    rungs = (
        tuple(ladder)
        if ladder
        else (
            SHORT_LADDER if days < SHORT_HISTORY_DAYS else tuple(format_duration(t) for t in DEFAULT_LADDER)
        )
    )
    schedule = admin_schedule(rounds)
    clock = SharedStepClock(start, Path(f"{stem}.clock"))

    def say(text: str) -> None:
        if progress:
            print(text, file=stream, flush=True)

    say(
        f"canary history: {rounds} rounds ({days:g} days) of {DEMO_MODEL} from {start:%Y-%m-%d %H:%M} UTC, "
        f"enforce mode, ladder {', '.join(rungs)}, time scale {time_scale:g}"
    )
    walls: list[float] = []
    t_all = time.monotonic()
    slack = {k: os.environ.pop(k) for k in SLACK_ENV if k in os.environ}  # never alert a real channel
    with history_prefect(lean), simulator_process(fleet, time_scale=time_scale, clock=clock) as sim:
        os.environ["OPENROUTER_API_KEY"] = sim.api_key  # the simulator's own key, this process only
        overrides = history_overrides(
            sim.base_url,
            str(db),
            time_scale=time_scale,
            ladder=rungs,
            exclusions_file=exclusions_file,
            publish_dir=f"{stem}-published",
        ) | (extra_overrides or {})
        Path(config_path).write_text(config_file_text(overrides), encoding="utf-8")
        say(f"simulator at {sim.base_url} (child process); Prefect: this process's temporary server")
        for n in range(rounds):
            now = clock.now()
            for ev in (e for e in schedule if e.round_no == n):
                apply_admin_event(str(db), ev, DEMO_MODEL, now)
                say(f"  {now:%m-%d %H:%M} admin: exclude {ev.action} {ev.tag} ({ev.reason})")
            t0 = time.monotonic()
            summary = canary_round(model=DEMO_MODEL, round_ts=now, overrides=overrides)
            walls.append(time.monotonic() - t0)
            if on_round is not None:
                on_round(n, summary)
            if summary["decisions"]:
                say(f"  {now:%m-%d %H:%M} {', '.join(summary['decisions'])}")
            if (n + 1) % ROUNDS_PER_DAY == 0 or n + 1 == rounds:
                done = time.monotonic() - t_all
                eta = done / (n + 1) * (rounds - n - 1)
                say(
                    f"day {(n + 1) / ROUNDS_PER_DAY:4.1f}: {n + 1}/{rounds} rounds, {done:6.1f} s, "
                    f"{sum(walls[-ROUNDS_PER_DAY:]) / len(walls[-ROUNDS_PER_DAY:]):.2f} s/round, "
                    f"ETA {eta:5.0f} s; ignore={summary['ignore']}"
                )
            clock.advance(ROUND_INTERVAL)
    clock.close()
    os.environ.update(slack)
    wall = time.monotonic() - t_all
    with store.open_store(str(db), snapshot=True):
        pass  # make sure the analysts' snapshot holds the last round
    size = db.stat().st_size
    result = HistoryResult(
        str(db), config_path, rounds, start, start + (rounds - 1) * ROUND_INTERVAL, wall, tuple(walls), size
    )
    say(
        f"done: {rounds} rounds in {wall:.1f} s ({result.rounds_per_s:.2f} rounds/s, median round "
        f"{sorted(walls)[len(walls) // 2]:.2f} s); {db} {size / 1e6:.1f} MB; analysts: "
        f"{store.snapshot_path(db)}\n  try: canary at --config {config_path} --model {DEMO_MODEL} "
        f"--time {(start + timedelta(hours=3)):%Y-%m-%dT%H:%M}Z"
    )
    return result


if __name__ == "__main__":  # the simulator child of `simulator_process`
    serve_simulator_child(sys.argv[1], float(sys.argv[2]), sys.argv[3])
