"""A reader holding the live DuckDB file through a whole round: nothing is lost, the round lands later.

Another process (a notebook, say) opens the database, read-only or read-write, before round 2 starts and keeps
it until round 2 has ended. Round 2 probes without its history, cannot get its write window, spools its settled
attempts next to the database and reports `deferred`. Once the file is free, round 3 lands round 2 first (its
decisions settled against the history as it then stands), then itself; `canary status` shows round 2 as landed
late. The windows' lock budgets are shortened here (1 s and 2 s) so the test does not wait 30 s for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.fleet import Fleet, parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.rounds import GENEROUS_TTFT_S, round_overrides

pytestmark = pytest.mark.e2e

MODEL = "acme/deferred-model"
T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
HOLD = (
    "import duckdb, sys\n"
    "con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == 'ro')\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def fleet() -> Fleet:
    endpoints: list[dict[str, Any]] = [{"tag": t, "provider_name": t.capitalize()} for t in ("alpha", "beta", "gamma")]
    endpoints.append({"tag": "broken", "provider_name": "Broken", "faults": [{"kind": "invalid_json"}]})
    return parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})


@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(fleet()) as handle:
        yield handle


@pytest.mark.parametrize("holder", ["ro", "rw"])
def test_a_round_that_cannot_write_is_spooled_and_landed_by_the_next(
    prefect_harness: None, sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holder: str
) -> None:
    from flows.round import canary_round
    from tasks.round import steps as round_steps

    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    monkeypatch.setattr(round_steps, "PRIOR_LOCK_TIMEOUT_S", 1.0)
    monkeypatch.setattr(round_steps, "SAVE_LOCK_TIMEOUT_S", 2.0)
    ov = round_overrides(sim, tmp_path, MODEL, ttft_s=GENEROUS_TTFT_S, languages=["en"], min_hosts=2)
    db = ov["db_path"]
    at = [T0 + timedelta(minutes=30 * i) for i in range(3)]
    assert canary_round(model=MODEL, round_ts=at[0], overrides=ov)["status"] == "complete"

    reader = subprocess.Popen([sys.executable, "-c", HOLD, db, holder], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "held"
        second = canary_round(model=MODEL, round_ts=at[1], overrides=ov)
        assert second["status"] == "deferred" and second["attempts"] > 0
        spooled = list(Path(db + ".spool").glob("*.round.json"))
        assert len(spooled) == 1
        assert len(json.loads(spooled[0].read_text())["attempts"]) == second["attempts"]
    finally:
        if reader.stdin is not None:
            reader.stdin.close()
        reader.wait(timeout=30)

    third = canary_round(model=MODEL, round_ts=at[2], overrides=ov)
    assert third["status"] == "complete"
    assert not list(Path(db + ".spool").glob("*.round.json"))
    with store.open_store(db, read_only=True) as con:
        r2 = con.execute("SELECT status, deferred, attempt_count FROM rounds WHERE round_id = ?",
                         [second["round_id"]]).fetchone()
        landed = con.execute("SELECT count(*) FROM attempts WHERE round_id = ?", [second["round_id"]]).fetchone()
        decisions = con.execute("SELECT tag, action, round_id FROM decisions").fetchall()
    assert r2 == ("complete", True, second["attempts"]) and landed == (second["attempts"],)
    # Round 2's failure counted: broken failed rounds 1 and 2, suspended when round 2 landed.
    assert decisions == [("broken", "suspend", second["round_id"])]

    config = tmp_path / "canary.toml"
    config.write_text(f'models = ["{MODEL}"]\ndb_path = "{db}"\n', encoding="utf-8")
    status = subprocess.run([str(Path(sys.executable).parent / "canary"), "status", "--config", str(config)],
                            env=dict(os.environ), capture_output=True, text=True, timeout=60)
    assert f"round {second['round_id']}: complete (deferred: landed late)" in status.stdout, status
