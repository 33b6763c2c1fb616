"""`canary demo --days N`: days of history from the round's own steps over a simulated fleet, in minutes.

Rounds are 30 simulated minutes apart (48 a day) on a step clock; the simulator
(provider_canary/simulator/fleets/history.toml, faults that come and go by simulated time) runs in a child process and
serves each request at its round's simulated time, so fault windows follow the history, not the wall clock. Two engines
build the same history (tests/e2e/test_history.py compares them round by round):

* "pipeline" (the default; provider_canary/demo/pipeline.py): each round runs the steps the `canary-round` flow wires
  (load the prior, plan, probe, settle, save in one transaction, publish the ignore list, deliver), in the
  flow's order, one round after another, without a flow run per round; while a round settles, the probes of
  the next rounds are already in flight (their languages predicted, and sent again when a round's outcome
  changes the prediction). No Prefect API is used: the artifacts are left out, the ignore-list files are kept.
* "flow": every round is a real `canary-round` flow run (`flows.round.canary_round`, the code the scheduler
  runs) on a temporary Prefect server of this process (never PREFECT_API_URL: a real deployment's UI is no
  place for hundreds of simulated runs), with `history_prefect()`'s lean settings
  (provider_canary/demo/simulator_process.py). About 4x slower (README "Quick start"); confirmation rounds
  (`confirmations=True`) need it.

Rounds cannot run in parallel: the policy is a fold over one model's rounds (streaks, ladder), and the
language rotation reads the previous round. Delays are scaled by `time_scale` (0.05: a 12 s slow start takes
0.6 s) and so are the TTFT threshold and the probe budgets, so the contracts judge the same ratios as with
the real defaults. Measured: benchmarks/bench_history.py.

Layers exercised on purpose: a builtin exclusion (a generated exclusions file next to the database), an
operational exclusion added and removed through `tasks.store`, another that runs out by its `until`, and
the canary's own suspensions, expiries and restores (enforce mode). provider_canary/demo/scenario.py holds that
scenario (the admin's story, the builtin layer, the round's config); this module runs it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from provider_canary.demo.scenario import (
    AdminEvent,
    admin_schedule,
    builtin_file_text,
    config_file_text,
    history_overrides,
)
from provider_canary.demo.settings import DEMO_MODEL, quiet_logs
from provider_canary.demo.simulator_process import SharedStepClock, history_prefect, simulator_process
from tasks.config import DEFAULT_LADDER
from tasks.config.loading import format_duration
from tasks.errors import ConfigError

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
SLACK_ENV = ("SLACK_BOT_TOKEN", "SLACK_CHANNEL", "SLACK_WEBHOOK_URL", "SLACK_API_URL")


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
    confirmations: int = 0  # confirmation rounds run between the rounds (build_history(confirmations=True))

    @property
    def rounds_per_s(self) -> float:
        return self.rounds / self.wall_s if self.wall_s else 0.0


def apply_admin_event(db_path: str, ev: AdminEvent, model: str, at: datetime) -> None:
    from tasks import store
    from tasks.core.types import OperationalExclusion

    with store.open_store(db_path) as con:
        if ev.action == "add":
            until = at + ev.until_rounds * ROUND_INTERVAL if ev.until_rounds else None
            store.add_exclusion(con, OperationalExclusion(ev.tag, ev.reason, ev.who, at, model, until))
        else:
            store.remove_exclusion(con, ev.tag, model, ev.who, ev.reason, at)


RunRound = Callable[[int, datetime], dict[str, Any]]
_ENGINES = {
    "pipeline": "the round's steps in this process, the next rounds' probes in flight (no Prefect API)",
    "flow": "a canary-round flow run per round on this process's private Prefect server",
}


@contextmanager
def _engine(engine: str, overrides: dict[str, Any], times: Sequence[datetime], api_key: str
            ) -> Iterator[RunRound]:
    """`run_round(n, round_ts)` of the chosen engine: round n (at times[n]) -> the flow's summary dict."""
    if engine == "pipeline":
        from provider_canary.demo.pipeline import pipelined_rounds

        with pipelined_rounds(overrides, DEMO_MODEL, times, api_key) as run_round:
            yield run_round
        return
    from flows.round import canary_round  # after quiet_logs() set Prefect's log level

    def flow_round(_n: int, now: datetime) -> dict[str, Any]:
        return canary_round(model=DEMO_MODEL, round_ts=now, overrides=overrides, refresh_snapshot=False)

    yield flow_round


def _confirm(summary: dict[str, Any], overrides: dict[str, Any], clock: SharedStepClock, before: datetime,
             ) -> list[dict[str, Any]]:
    """The confirmation rounds `summary` asks for, as flow runs at their simulated time (flow engine only)."""
    from flows.round import canary_round
    from tasks.round.confirmations import run_confirmations

    def confirm_round(**kw: Any) -> dict[str, Any]:
        return canary_round(model=DEMO_MODEL, overrides=overrides, **kw)

    return run_confirmations(summary, confirm_round, clock, before=before)


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
    confirmations: bool = False,
    engine: str | None = None,
) -> HistoryResult:
    """Run `days` x 48 real rounds over the simulated fleet into a fresh `db_path`; return timings.

    `ladder`: suspension lengths; default the configured ladder (1d, 3d, 7d), or SHORT_LADDER for a
    history shorter than SHORT_HISTORY_DAYS. Writes `<stem>.exclusions.toml` and `<stem>.canary.toml` next
    to the database (the builtin layer and a config for `canary at/status --config`).

    `confirmations`: run the confirmation rounds the rounds ask for (tasks/round/confirmations.py) at their simulated
    time, between the 30-minute rounds (`on_round` sees them too, with the round number they follow).
    Off by default, so a history's rounds stay 30 minutes apart unless asked.

    `engine`: "pipeline" (the default) or "flow" (the module docstring; the default with `confirmations`,
    which are flow runs of their own). Both store the same rounds.
    """
    engine = engine or ("flow" if confirmations else "pipeline")
    rounds = _checked_rounds(days, start, engine, confirmations)
    plan = _plan(days, db_path, rounds, start, ladder, engine, confirmations)
    log = _Progress(out or sys.stdout, progress, rounds)
    clock = SharedStepClock(start, Path(f"{plan.stem}.clock"))
    log.say(
        f"canary history: {rounds} rounds ({days:g} days) of {DEMO_MODEL} from {start:%Y-%m-%d %H:%M} UTC, "
        f"enforce mode, ladder {', '.join(plan.rungs)}, time scale {time_scale:g}"
    )
    # Never alert a real Slack channel; the simulator's own key only while the history runs.
    saved_env = {k: os.environ.pop(k) for k in (*SLACK_ENV, "OPENROUTER_API_KEY") if k in os.environ}
    from provider_canary.demo.pipeline import no_prefect_api

    try:
        with (
            quiet_logs(),
            history_prefect(lean) if engine == "flow" else no_prefect_api(),
            simulator_process(fleet, time_scale=time_scale, clock=clock) as sim,
        ):
            os.environ["OPENROUTER_API_KEY"] = sim.api_key  # the simulator's own key, this process only
            overrides = history_overrides(
                sim.base_url,
                plan.db,
                time_scale=time_scale,
                ladder=plan.rungs,
                exclusions_file=plan.exclusions_file,
                publish_dir=f"{plan.stem}-published",
            ) | (extra_overrides or {})
            Path(plan.config_path).write_text(config_file_text(overrides), encoding="utf-8")
            times = [start + n * ROUND_INTERVAL for n in range(rounds)]
            with _engine(engine, overrides, times, sim.api_key) as run_round:
                log.say(f"simulator at {sim.base_url} (child process); {_ENGINES[engine]}")
                for n in range(rounds):
                    _history_round(n, plan, run_round, overrides, clock, log, on_round)
    finally:
        clock.close()
        os.environ.pop("OPENROUTER_API_KEY", None)
        os.environ.update(saved_env)
    return _finish(plan, log)


@dataclass(frozen=True)
class _Plan:
    """What a history writes where, and the scenario it plays."""

    db: str
    stem: str
    exclusions_file: str
    config_path: str
    rounds: int
    start: datetime
    rungs: tuple[str, ...]
    schedule: tuple[AdminEvent, ...]
    confirmations: bool


class _Progress:
    """The progress lines (`say`) and the timings they and the result report."""

    def __init__(self, stream: TextIO, progress: bool, rounds: int) -> None:
        self.stream, self.progress, self.rounds = stream, progress, rounds
        self.walls: list[float] = []
        self.confirmed = 0
        self.t_all = time.monotonic()

    def say(self, text: str) -> None:
        if self.progress:
            print(text, file=self.stream, flush=True)

    def day_done(self, n: int, summary: dict[str, Any]) -> None:
        """After round n: a line per simulated day (and after the last round)."""
        if (n + 1) % ROUNDS_PER_DAY == 0 or n + 1 == self.rounds:
            done = time.monotonic() - self.t_all
            eta = done / (n + 1) * (self.rounds - n - 1)
            self.say(
                f"day {(n + 1) / ROUNDS_PER_DAY:4.1f}: {n + 1}/{self.rounds} rounds, {done:6.1f} s, "
                f"{sum(self.walls[-ROUNDS_PER_DAY:]) / len(self.walls[-ROUNDS_PER_DAY:]):.2f} s/round, "
                f"ETA {eta:5.0f} s; ignore={summary['ignore']}"
            )


def _checked_rounds(days: float, start: datetime, engine: str, confirmations: bool) -> int:
    """How many rounds `days` gives, after the arguments are checked (a ConfigError names what is wrong)."""
    if engine not in _ENGINES:
        raise ConfigError(f"demo: unknown history engine {engine!r} (one of: {', '.join(_ENGINES)})")
    if confirmations and engine != "flow":
        raise ConfigError("demo: confirmation rounds need the flow engine (engine='flow')")
    rounds = int(round(days * ROUNDS_PER_DAY))
    if rounds < 1:
        raise ConfigError(f"demo: --days must give at least one round of 30 minutes (got {days:g})")
    if start.tzinfo is None:
        raise ConfigError("demo: the history start must be timezone-aware")
    return rounds


def _plan(days: float, db_path: str, rounds: int, start: datetime, ladder: Sequence[str] | None, engine: str,
          confirmations: bool) -> _Plan:
    """A fresh database, the builtin exclusions file beside it, and the ladder the history runs with."""
    db = Path(db_path)
    db.parent.mkdir(parents=True, exist_ok=True)
    _fresh(db)
    stem = str(db.with_suffix("")) if db.suffix == ".duckdb" else str(db)
    exclusions_file = f"{stem}.exclusions.toml"
    Path(exclusions_file).write_text(builtin_file_text(DEMO_MODEL), encoding="utf-8")
    rungs = (
        tuple(ladder)
        if ladder
        else (
            SHORT_LADDER if days < SHORT_HISTORY_DAYS else tuple(format_duration(t) for t in DEFAULT_LADDER)
        )
    )
    return _Plan(str(db), stem, exclusions_file, f"{stem}.canary.toml", rounds, start, rungs,
                 tuple(admin_schedule(rounds)), confirmations)


def _history_round(n: int, plan: _Plan, run_round: RunRound, overrides: dict[str, Any], clock: SharedStepClock,
                   log: _Progress, on_round: Callable[[int, dict[str, Any]], None] | None) -> None:
    """Round n at the clock's time: the admin's events due, the round, its confirmations; the clock then steps
    to the next round."""
    now = clock.now()
    next_at = now + ROUND_INTERVAL
    for ev in (e for e in plan.schedule if e.round_no == n):
        apply_admin_event(plan.db, ev, DEMO_MODEL, now)
        log.say(f"  {now:%m-%d %H:%M} admin: exclude {ev.action} {ev.tag} ({ev.reason})")
    t0 = time.monotonic()
    summary = run_round(n, now)
    log.walls.append(time.monotonic() - t0)
    if on_round is not None:
        on_round(n, summary)
    if summary["decisions"]:
        log.say(f"  {now:%m-%d %H:%M} {', '.join(summary['decisions'])}")
    if plan.confirmations:
        for extra in _confirm(summary, overrides, clock, next_at):
            log.confirmed += 1
            if on_round is not None:
                on_round(n, extra)
            if extra["decisions"]:
                log.say(f"  {clock.now():%m-%d %H:%M} confirmation: {', '.join(extra['decisions'])}")
    log.day_done(n, summary)
    clock.advance(next_at - clock.now())


def _finish(plan: _Plan, log: _Progress) -> HistoryResult:
    """The analysts' snapshot refreshed, the closing line said, the timings returned."""
    from tasks import store

    wall = time.monotonic() - log.t_all
    with store.open_store(plan.db, snapshot=True):
        pass  # make sure the analysts' snapshot holds the last round
    db, start, rounds, walls = Path(plan.db), plan.start, plan.rounds, log.walls
    size = db.stat().st_size
    result = HistoryResult(
        plan.db, plan.config_path, rounds, start, start + (rounds - 1) * ROUND_INTERVAL, wall, tuple(walls), size,
        log.confirmed,
    )
    log.say(
        f"done: {rounds} rounds in {wall:.1f} s ({result.rounds_per_s:.2f} rounds/s, median round "
        f"{sorted(walls)[len(walls) // 2]:.2f} s); {db} {size / 1e6:.1f} MB; analysts: "
        f"{store.snapshot_path(db)}\n  try: canary at --config {plan.config_path} --model {DEMO_MODEL} "
        f"--time {(start + timedelta(hours=3)):%Y-%m-%dT%H:%M}Z"
    )
    return result
