"""Confirmation rounds for real: `canary-round` flow runs (Prefect test harness) against the simulator.

A fleet of four healthy endpoints, one with broken structured output (a hard fault) and one slow to start
(TTFT only). The first round fails both; the hard fault is confirmed by a partial round 5 simulated minutes
later, which probes only that endpoint's structured contract and suspends it; the slow endpoint waits for
the next full round, and the healthy ones are never probed by a confirmation. Exported and replayed, the
history (with its partial round) gives the live decisions. A deployment run scheduled for a confirmation
shows in the Prefect API as a Scheduled `canary-round` run whose parameters say what it confirms.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.demo.simulator_process import SimulatorChild
from tasks import store
from tasks.core.plan import make_round_id
from tasks.round.confirmations import run_confirmations
from tasks.runtime.clock import StepClock
from tests.support.rounds import SLOW_START_TTFT_S, child_simulator, round_overrides

pytestmark = pytest.mark.e2e

MODEL = "acme/confirm-model"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
HEALTHY = ["alpha", "beta", "delta", "gamma"]
FLEET = {"models": [{"id": MODEL, "endpoints": [
    *[{"tag": t, "provider_name": t.title()} for t in HEALTHY],
    {"tag": "broken", "provider_name": "Broken", "faults": [{"kind": "schema_violation"}]},
    # 6 s at time_scale 0.1 against a 3 s threshold: fails whatever the load, healthy ones keep a 3 s margin
    {"tag": "slow", "provider_name": "Slow", "faults": [{"kind": "slow_first_token", "delay_s": 60.0}]},
]}]}


sim = child_simulator(FLEET)


def overrides(sim: SimulatorChild, tmp: Path) -> dict[str, Any]:
    return round_overrides(sim, tmp, MODEL, ttft_s=SLOW_START_TTFT_S, read_timeout_s=5.0, probe_budget_s=9.0,
                           languages=["en", "fr", "de"])


@pytest.fixture(scope="module")
def history(prefect_harness: None, sim: SimulatorChild, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    from flows.round import canary_round

    tmp = tmp_path_factory.mktemp("confirm")
    os.environ["OPENROUTER_API_KEY"] = sim.api_key
    ov = overrides(sim, tmp)
    clock = StepClock(T0)

    def run(**kw: Any) -> dict[str, Any]:
        return canary_round(model=MODEL, overrides=ov, **kw)

    first = run(round_ts=T0)
    confirmations = run_confirmations(first, run, clock, before=T0 + timedelta(minutes=30))
    clock.advance(T0 + timedelta(minutes=30) - clock.now())
    second = run(round_ts=clock.now())
    later = run_confirmations(second, run, clock, before=T0 + timedelta(minutes=60))
    return {"tmp": tmp, "db": str(tmp / "canary.duckdb"), "first": first, "confirmations": confirmations,
            "second": second, "later": later, "clock": clock}


def test_the_first_round_asks_to_confirm_the_hard_fault_only(history: dict[str, Any]) -> None:
    first = history["first"]
    assert first["decisions"] == [] and not first["partial"]
    assert first["confirmation"] == {
        "model": MODEL,
        "only": ["broken"],
        "contracts": {"broken": ["structured"]},  # slow failed ttft only: never hard
        "confirms": make_round_id(MODEL, T0),
        "due": (T0 + timedelta(minutes=5)).isoformat(),
    }


def test_the_confirmation_round_suspends_the_hard_fault_five_minutes_later(history: dict[str, Any]) -> None:
    [confirmation] = history["confirmations"]
    at = T0 + timedelta(minutes=5)
    assert confirmation["round_id"] == make_round_id(MODEL, at)
    assert confirmation["partial"] and confirmation["confirms"] == make_round_id(MODEL, T0)
    assert confirmation["status"] == "complete"
    assert confirmation["decisions"] == ["suspend:broken"]
    assert confirmation["ignore"] == ["broken"]  # published 5 minutes after the first failing round
    assert confirmation["confirmation"] is None  # suspended: nothing left to confirm
    with store.open_store(history["db"]) as con:
        row = con.execute("SELECT partial, endpoints FROM rounds WHERE round_id = ?",
                          [confirmation["round_id"]]).fetchone()
        probed = con.execute("SELECT DISTINCT tag, contract FROM attempts WHERE round_id = ?",
                             [confirmation["round_id"]]).fetchall()
        decision = con.execute("SELECT decided_at, evidence_round_ids FROM decisions WHERE action = 'suspend'"
                               " AND tag = 'broken'").fetchall()
    assert row == (True, ["broken"])
    assert probed == [("broken", "structured")]
    assert decision == [(at, [make_round_id(MODEL, T0), make_round_id(MODEL, at)])]


def test_ttft_waits_for_the_full_round_and_healthy_endpoints_are_never_touched(history: dict[str, Any]) -> None:
    second = history["second"]
    assert second["decisions"] == ["suspend:slow"]  # two full rounds, as before
    assert second["confirmation"] is None and history["later"] == []
    with store.open_store(history["db"]) as con:
        partial_attempts = con.execute(
            "SELECT DISTINCT a.tag FROM attempts a JOIN rounds r USING (round_id) WHERE r.partial"
        ).fetchall()
        healthy = con.execute(
            "SELECT tag, fail_streak, clean_streak, suspended_until FROM endpoint_state WHERE tag IN (?, ?, ?, ?)"
            " ORDER BY tag", HEALTHY).fetchall()
        touched = con.execute("SELECT count(*) FROM decisions WHERE tag IN (?, ?, ?, ?)", HEALTHY).fetchone()
    assert partial_attempts == [("broken",)]
    assert healthy == [(t, 0, 2, None) for t in HEALTHY]  # two full rounds, nothing from the confirmation
    assert touched == (0,)


def test_export_then_replay_gives_the_live_decisions(history: dict[str, Any], tmp_path: Path) -> None:
    from provider_canary.cli.admin_read import export_history_command
    from tasks.config.loading import config_from_mapping
    from tasks.core.replay import decision_line, replay
    from tasks.core.replay_input import iso

    out = tmp_path / "rounds.jsonl"
    export_history_command(out=out, config=None, model=None, db=history["db"])
    lines = out.read_text().splitlines()
    assert sum('"partial": true' in line for line in lines) == 1  # the confirmation lists only "broken"
    cfg = config_from_mapping({"mode": "enforce", "models": [MODEL]})
    replayed = [decision_line(d) for d in replay(lines, cfg)]
    with store.open_store(history["db"]) as con:
        live = con.execute("SELECT decided_at, model, tag, action, until, ladder_step FROM decisions"
                           " ORDER BY decided_at, tag").fetchall()
    assert replayed == [{"at": iso(at), "model": m, "tag": tag, "action": action,
                         "until": iso(until) if until else None, "ladder_step": step}
                        for at, m, tag, action, until, step in live]
    assert [(r["tag"], r["action"]) for r in replayed] == [("broken", "suspend"), ("slow", "suspend")]


def test_a_deployment_confirmation_is_a_scheduled_canary_round_run(prefect_harness: None) -> None:
    from prefect.client.schemas.objects import StateType

    from flows.round import canary_round
    from tasks.core.confirm import ConfirmationRequest
    from tasks.core.types import Contract
    from tasks.round.confirmations import schedule_deployment_run

    deployment_id = canary_round.to_deployment(name="canary-round-confirm-test").apply()
    due = datetime.now(UTC) + timedelta(hours=1)
    request = ConfirmationRequest(MODEL, make_round_id(MODEL, T0), due, {"broken": (Contract.STRUCTURED,)})
    run_id = schedule_deployment_run(str(deployment_id), request,
                                     {"model": MODEL, "config_path": "canary.toml", "round_ts": T0,
                                      "run_id": "the-parent-run"})  # a round's own: never the new run's
    again = schedule_deployment_run(str(deployment_id), request, {"model": MODEL})
    assert again == run_id  # idempotent per confirmed round

    from tests.support.prefect_runs import take_scheduled_run

    run = take_scheduled_run(run_id)
    assert run.state is not None and run.state.type is StateType.SCHEDULED
    assert run.expected_start_time is not None and abs((run.expected_start_time - due).total_seconds()) < 1
    assert run.name.startswith("canary-confirm-acme-confirm-model-")
    assert run.parameters == {"model": MODEL, "config_path": "canary.toml", "only": ["broken"],
                              "contracts": {"broken": ["structured"]}, "confirms": make_round_id(MODEL, T0)}
