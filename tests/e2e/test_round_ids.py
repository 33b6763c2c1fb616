"""A round is never overwritten (docs/design.md "round"; docs/operations.md "Fault table": two rounds in one second).

Real cycles (`canary-cycle` flow runs against the tests' Prefect API) on the loopback simulator, one model with a
broken endpoint (`invalid_json`: a hard structured failure every round), `fail_rounds = 2`:

* two cycles of the model in one second are two rounds: two round ids (the time to the millisecond), both
  stored, and the suspension's evidence names both, not one round counted twice;
* a cycle whose round time is exactly another run's (a time given twice) is refused at its start: its round is
  reported failed with the reason, nothing is probed, and the first round's rows and decisions stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.rounds import GENEROUS_TTFT_S, hard_fault_fleet, round_overrides

pytestmark = pytest.mark.e2e

MODEL = "acme/same-second"
T0 = datetime(2026, 9, 1, 12, 0, 0, tzinfo=UTC)
FLEET = hard_fault_fleet(MODEL)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


def overrides(sim: SimulatorHandle, tmp: Path) -> dict[str, Any]:
    return round_overrides(sim, tmp, MODEL, ttft_s=GENEROUS_TTFT_S, languages=["en"], min_hosts=1, fail_rounds=2,
                           confirm_after_min=0)


def cycle(ts: datetime, ov: dict[str, Any]) -> dict[str, Any]:
    from flows.cycle import canary_cycle

    [summary] = canary_cycle(cycle_ts=ts, overrides=ov)["rounds"]
    return summary


def test_two_cycles_in_one_second_are_two_rounds_and_two_pieces_of_evidence(
    prefect_harness: None, sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    ov = overrides(sim, tmp_path)
    first = cycle(T0 + timedelta(milliseconds=250), ov)
    second = cycle(T0 + timedelta(milliseconds=750), ov)

    assert (first["status"], second["status"]) == ("complete", "complete")
    assert first["round_id"] == f"{MODEL}@2026-09-01T12:00:00.250Z"
    assert second["round_id"] == f"{MODEL}@2026-09-01T12:00:00.750Z"
    assert second["decisions"] == ["suspend:broken"]
    with store.open_store(ov["db_path"], read_only=True) as con:
        rounds = con.execute("SELECT round_id, status, attempt_count FROM rounds ORDER BY round_ts").fetchall()
        [evidence] = con.execute("SELECT evidence_round_ids FROM decisions WHERE action = 'suspend'").fetchone()
    assert [(r[0], r[1]) for r in rounds] == [(first["round_id"], "complete"), (second["round_id"], "complete")]
    assert [r[2] for r in rounds] == [first["attempts"], second["attempts"]]
    assert list(evidence) == [first["round_id"], second["round_id"]]  # two distinct failing rounds


def test_a_round_id_another_run_holds_is_refused_not_replaced(
    prefect_harness: None, sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    ov = overrides(sim, tmp_path)
    first = cycle(T0, ov)
    with store.open_store(ov["db_path"], read_only=True) as con:
        before = con.execute("SELECT * FROM attempts ORDER BY attempt_id").fetchall()

    again = cycle(T0, ov)  # another cycle run, the same instant: the same round id

    assert first["status"] == "complete"
    assert again["status"] == "failed"
    assert again["error"].startswith(f"RoundIdTaken: round {first['round_id']}: another run's round (complete, run ")
    with store.open_store(ov["db_path"], read_only=True) as con:
        rounds = con.execute("SELECT round_id, status, error FROM rounds").fetchall()
        after = con.execute("SELECT * FROM attempts ORDER BY attempt_id").fetchall()
        decisions = con.execute("SELECT count(*) FROM decisions").fetchone()[0]
    assert rounds == [(first["round_id"], "complete", None)]
    assert after == before  # not one row of the first round replaced
    assert decisions == 0  # one failing round so far: nothing counted twice
