"""`canary demo`: the built-in simulator, the default faulty fleet, a few real rounds on a compressed clock.

No key and no network: the simulator runs in a child process on 127.0.0.1 and the rounds are real Prefect flow
runs of `canary-round`. Rounds are 30 simulated minutes apart, and time inside a round runs 8x fast: the
simulator's delays and the round's TTFT threshold, timeouts and probe budget are all scaled by
DEMO_TIME_SCALE (the fleet's 12 s slow start takes 1.5 s against a 1.25 s threshold, i.e. 10 s x 1/8), so a
round takes ~3 s instead of the ~25 s its slowest endpoint needs in real time. The real defaults run in real
time in tests/e2e/test_real_defaults.py.
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from provider_canary.demo.settings import (
    DEFAULT_FLEET,
    DEMO_CONTROLS,
    DEMO_MODEL,
    DEMO_TIME_SCALE,
    DEMO_WHO,
    demo_overrides,
    quiet_logs,
)
from tasks.core.contracts import names
from tasks.core.render.markdown import OUTCOME_CODES

if TYPE_CHECKING:
    from tasks.prefect_api.server import PrefectApi

_OUTCOME_STYLE = {"pass": "green", "fail": "bold red", "transport": "yellow", "inconclusive": "dim"}
_MARK = {str(outcome): code for outcome, code in OUTCOME_CODES.items()}  # the round artifact's codes
_STATUS_STYLE = {"clean": "green", "fail": "bold red", "transport": "yellow", "inconclusive": "dim"}


def run_demo(*, rounds: int = 4, days: float = 0, db_path: str = "demo.duckdb", engine: str | None = None) -> None:
    if days:
        from provider_canary.demo.history import build_history

        build_history(days=days, db_path=db_path, engine=engine)
        return
    from tasks.prefect_api.server import prefect_api

    # The configured Prefect API, else a private server that dies with this process (tasks/prefect_api/server.py),
    # starting while the flow is imported and the simulator starts.
    with quiet_logs(), prefect_api() as api:
        _run_rounds(rounds, db_path, api)


def _run_rounds(rounds: int, db_path: str, api: PrefectApi) -> None:
    from flows.round import canary_round
    from provider_canary.demo.simulator_process import SharedStepClock, simulator_process
    from tasks import store
    from tasks.round.probe_task import warm_up

    console = Console(width=max(Console().width, 160))
    for stale in (Path(db_path), Path(f"{db_path}.wal")):
        stale.unlink(missing_ok=True)
    publish_dir = str(Path(db_path).with_suffix("")) + "-published"
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=rounds // 2)
    clock = SharedStepClock(start, Path(f"{Path(db_path).with_suffix('')}.clock"))
    console.print(f"[bold]canary demo[/]: {rounds} rounds of {DEMO_MODEL} against the built-in simulator")
    with store.open_store(db_path) as con:  # as `canary mode enforce` would: `canary status` then agrees
        store.set_setting(con, store.MODE_KEY, "enforce", at=clock.now(), who=DEMO_WHO)
    # A child process: in this one the simulator would share the GIL with the rounds' Prefect threads.
    with contextlib.closing(clock), simulator_process(DEFAULT_FLEET, time_scale=DEMO_TIME_SCALE, clock=clock) as sim:
        os.environ["OPENROUTER_API_KEY"] = sim.api_key  # the simulator's own key, this process only
        overrides = demo_overrides(sim.base_url, db_path, publish_dir)
        console.print(
            f"simulator at {sim.base_url}; enforce mode; positive control: {', '.join(DEMO_CONTROLS)}; "
            f"time x{DEMO_TIME_SCALE:g} inside a round (12 s slow start = {12 * DEMO_TIME_SCALE:g} s, TTFT "
            f"threshold {overrides['ttft_s']:g} s)"
        )
        # The probe worker while the Prefect server starts, not in round 1, whose wall the demo prints. Every
        # wait of more than a few seconds says what it waits for.
        waited = time.monotonic()
        console.print("starting the probe worker...")
        warm_up()
        if api.server is not None:
            console.print("starting a private Prefect server (3-5 s; the first on a machine 10-30 s)...")
        api.wait_ready()
        console.print(f"ready after {time.monotonic() - waited:.0f} s")
        endpoints = fleet_size(DEFAULT_FLEET, DEMO_MODEL)
        for n in range(1, rounds + 1):
            console.print(f"round {n} of {rounds}: probing the {endpoints} endpoints of {DEMO_MODEL}...")
            t0 = datetime.now(UTC)
            summary = canary_round(model=DEMO_MODEL, round_ts=clock.now(), overrides=overrides)
            wall = (datetime.now(UTC) - t0).total_seconds()
            with store.open_store(db_path) as con:
                print_round(console, con, summary, n, wall)
            clock.advance(timedelta(minutes=30))
    console.print(
        f"\nDuckDB left at [bold]{db_path}[/] (analysts: {store.snapshot_path(db_path)}); "
        f"ignore list JSON in {publish_dir}/\n"
        f"The other commands read canary.toml's database unless told otherwise: add [bold]--db {db_path}[/]"
        f" (or export CANARY_DB={db_path}), e.g.\n"
        f"  canary status --db {db_path}\n"
        f"  canary ignore-list --db {db_path} --json\n"
        f"  canary at --model {DEMO_MODEL} --db {db_path}"
        f" --time {clock.now() - timedelta(minutes=30):%Y-%m-%dT%H:%M}Z\n"
        f"  canary exclude add groq --reason 'trying it' --db {db_path}   (writes {publish_dir}/ only)\n"
        f"Router against the simulator: examples/routes-simulator.toml (how-to at its top)"
    )


def fleet_size(fleet: Path, model: str) -> int:
    """How many endpoints of `model` the fleet file lists (what round 1's progress line announces)."""
    from provider_canary.simulator.fleet_file import load_fleet

    return sum(len(m.endpoints) for m in load_fleet(fleet).models if m.id == model)


def _cell(outcome: str, reason: str) -> str:
    style = _OUTCOME_STYLE.get(outcome, "")
    return f"[{style}]ok[/]" if outcome == "pass" else f"[{style}]{_MARK.get(outcome, outcome)} {reason}[/]"


def print_round(console: Console, con: Any, summary: dict[str, Any], n: int, wall_s: float) -> None:
    from tasks.store.history import round_view

    round_id = summary["round_id"]
    view = round_view(con, round_id, summary["model"])
    statuses, states = view.statuses, view.streaks
    contracts = [str(c) for c in names()]  # the registry's order (tasks/core/contracts/)
    cells: dict[str, dict[str, str]] = {}
    for tag, contract, outcome, reason in view.outcomes:
        cells.setdefault(tag, {})[contract] = _cell(outcome, reason)
    table = Table(
        title=f"Round {n} — {round_id} ({wall_s:.1f} s)",
        title_justify="left",
        show_lines=False,
        caption="ok = pass · FAIL = fail · tx = transport · ? = inconclusive · streak f/c = failing / clean rounds "
                "in a row after this one (rounds closer than confirm_after_min count once)",
        caption_justify="left",
    )
    table.add_column("endpoint")
    for c in contracts:
        table.add_column(c)
    table.add_column("status")
    table.add_column("streak f/c")
    table.add_column("suspended until")
    for tag in sorted(cells):
        st = states.get(tag, (0, 0, None))
        status = statuses.get(tag, "")
        table.add_row(
            tag,
            *[cells[tag].get(c, "") for c in contracts],
            f"[{_STATUS_STYLE.get(status, '')}]{status}[/]",
            f"{st[0]}/{st[1]}",
            st[2].strftime("%m-%d %H:%M") if st[2] is not None else "",
        )
    console.print(table)
    for action, tag, decided_until, why in view.decisions:
        console.print(
            f"  decision: [bold]{action}[/] {tag}"
            + (f" until {decided_until:%Y-%m-%d %H:%M}" if decided_until else "")
            + (f" — {why}" if why else "")
        )
    for kind, text in view.alerts:
        first = text.splitlines()[0] if text else ""
        console.print(f"  alert ({kind}): {first}")
    console.print(f"  ignore list: {summary['ignore']}")
