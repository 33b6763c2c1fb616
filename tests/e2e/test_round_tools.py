"""Real `canary-round` flow runs against the simulator's tools fleet (provider_canary/simulator/fleets/tools.toml).

An endpoint whose tool-call arguments break the schema is suspended after two rounds; the healthy ones
never are; one rate-limited on tool requests stays transport; one that does not list `tools` is never
probed for it.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.demo.simulator_process import SimulatorChild
from tasks import store
from tests.support.rounds import child_simulator, round_overrides

pytestmark = pytest.mark.e2e

FLEET = Path(__file__).parents[2] / "provider_canary" / "simulator" / "fleets" / "tools.toml"
MODEL = "qwen/qwen3-235b-a22b-instruct"
T0 = datetime(2026, 11, 3, 8, 0, tzinfo=UTC)
HEALTHY = ["deepinfra/fp8", "fireworks", "together"]
ROUNDS = 3


sim = child_simulator(FLEET)


@pytest.fixture(scope="module")
def rounds(
    prefect_harness: None, sim: SimulatorChild, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    from flows.round import canary_round

    tmp = tmp_path_factory.mktemp("tools-round")
    os.environ["OPENROUTER_API_KEY"] = sim.api_key
    overrides = round_overrides(
        sim, tmp, MODEL, ttft_s=1.0, read_timeout_s=5.0, probe_budget_s=8.0, languages=["en", "de"]
    )
    results = [
        canary_round(model=MODEL, round_ts=T0 + timedelta(minutes=30 * i), overrides=overrides)
        for i in range(ROUNDS)
    ]
    with store.open_store(tmp / "canary.duckdb") as con:
        outcomes = con.execute(
            "SELECT round_id, tag, contract, outcome, reason, evidence FROM outcomes ORDER BY round_id, tag"
        ).fetchall()
        tool_attempts = con.execute(
            "SELECT round_id, tag, attempt_no, finish_reason, tool_calls FROM attempts"
            " WHERE contract = 'tools'"
        ).fetchall()
        decisions = con.execute("SELECT tag, action FROM decisions ORDER BY decided_at, tag").fetchall()
    return {
        "results": results,
        "outcomes": outcomes,
        "tool_attempts": tool_attempts,
        "decisions": decisions,
    }


def tools_rows(rounds: dict[str, Any], round_no: int) -> dict[str, tuple[str, str, str]]:
    rid = rounds["results"][round_no]["round_id"]
    return {t: (o, r, e) for r_id, t, c, o, r, e in rounds["outcomes"] if r_id == rid and c == "tools"}


@pytest.mark.parametrize("round_no", range(ROUNDS))
def test_tools_outcomes_per_endpoint(rounds: dict[str, Any], round_no: int) -> None:
    rows = tools_rows(rounds, round_no)
    assert "lepton" not in rows  # no "tools" in its supported_parameters: never probed for it
    for tag in HEALTHY:
        assert rows[tag][:2] == ("pass", "ok"), rows[tag]
    assert rows["nebius"][:2] == ("transport", "http_429")
    if round_no < 2:  # from round 3 on novita is suspended, but it is still probed
        assert rows["novita"][:2] == ("fail", "schema_violation")
        assert "roll_dice $.dice." in rows["novita"][2] and "is not of type 'integer'" in rows["novita"][2]


def test_the_schema_violating_endpoint_is_suspended_in_two_rounds_and_the_healthy_ones_never(
    rounds: dict[str, Any],
) -> None:
    first, second, third = rounds["results"]
    assert first["ignore"] == []
    assert second["ignore"] == ["novita"]
    assert third["ignore"] == ["novita"]
    assert rounds["decisions"] == [("novita", "suspend")]
    for result in rounds["results"]:
        assert not set(HEALTHY + ["nebius", "lepton"]) & set(result["ignore"])


def test_tool_calls_land_in_the_attempts_table(rounds: dict[str, Any]) -> None:
    by_tag: dict[str, list[tuple[int, str | None, Any]]] = {}
    for _rid, tag, n, finish, calls in rounds["tool_attempts"]:
        by_tag.setdefault(tag, []).append((n, finish, json.loads(calls)))
    assert set(by_tag) == {"deepinfra/fp8", "fireworks", "together", "novita", "nebius"}
    for tag in HEALTHY + ["novita"]:
        call_turns = [(f, c) for n, f, c in by_tag[tag] if n == 1]
        assert len(call_turns) == ROUNDS
        assert all(f == "tool_calls" and [x["name"] for x in c] == ["roll_dice"] for f, c in call_turns)
    assert {n for rows in by_tag.values() for n, _, _ in rows} <= {1, 2}  # call turn, control turn
    assert all(c == [] for n, f, c in by_tag["nebius"])
