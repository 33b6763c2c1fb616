"""Real `canary-round` runs against the simulator where one endpoint answers every request as OpenRouter reports
a failed upstream hop: HTTP 200, `finish_reason: "stop"`, `native_finish_reason: "network_error"`, no content.

Issue 22: such an endpoint was judged three model failures (refusal `empty_reply`, structured `invalid_json`,
tools `no_call`) and the admin read that the model stopped calling tools and broke its JSON. Now every
contract of it says `upstream_error` quoting `network_error`, the suspension's alert says the same, and one
relaying a 429 with its cause keeps that cause in the attempts, outcomes and `canary at`.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from provider_canary.demo.simulator_process import SimulatorChild
from tasks import store
from tests.support.rounds import child_simulator, round_overrides

pytestmark = pytest.mark.e2e

MODEL = "qwen/qwen3-235b-a22b-instruct"
T0 = datetime(2026, 11, 3, 8, 0, tzinfo=UTC)
HEALTHY = ["deepinfra/fp8", "fireworks", "together"]
MODEL_REASONS = {"empty_reply", "invalid_json", "no_call"}
FLEET: dict[str, Any] = {"models": [{
    "id": MODEL,
    "endpoints": [
        {"tag": "deepinfra/fp8", "provider_name": "DeepInfra"},
        {"tag": "fireworks", "provider_name": "Fireworks"},
        {"tag": "together", "provider_name": "Together"},
        {"tag": "stealth", "provider_name": "Stealth", "faults": [{"kind": "masked_upstream_failure"}]},
        {"tag": "chutes", "provider_name": "Chutes",
         "faults": [{"kind": "http_error_before_stream", "status": 429, "applies_to": "structured"}]},
    ],
}]}

sim = child_simulator(FLEET)


@pytest.fixture(scope="module")
def rounds(prefect_harness: None, sim: SimulatorChild, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from flows.round import canary_round

    tmp = tmp_path_factory.mktemp("upstream-words")
    os.environ["OPENROUTER_API_KEY"] = sim.api_key
    overrides = round_overrides(sim, tmp, MODEL, ttft_s=1.0, read_timeout_s=5.0, probe_budget_s=8.0,
                                languages=["en"])
    results = [canary_round(model=MODEL, round_ts=T0 + timedelta(minutes=30 * i), overrides=overrides)
               for i in range(2)]
    with store.open_store(tmp / "canary.duckdb") as con:
        outcomes = con.execute("SELECT tag, contract, outcome, reason, evidence FROM outcomes").fetchall()
        attempts = con.execute(
            "SELECT tag, contract, error_detail, native_finish_reason FROM attempts").fetchall()
        alerts = con.execute("SELECT kind, tag, text, blocks_json FROM alerts").fetchall()
        decisions = con.execute("SELECT tag, action FROM decisions").fetchall()
    return {"results": results, "outcomes": outcomes, "attempts": attempts, "alerts": alerts,
            "decisions": decisions, "db": tmp / "canary.duckdb"}


def test_every_contract_of_the_masked_endpoint_is_one_upstream_error(rounds: dict[str, Any]) -> None:
    mine = [(c, o, r, e) for t, c, o, r, e in rounds["outcomes"] if t == "stealth" and c != "opening"]
    assert {c for c, *_ in mine} >= {"ttft", "refusal", "structured", "language", "tools"}
    assert {(o, r) for _, o, r, _ in mine} == {("fail", "upstream_error")}
    assert all("native_finish_reason (network_error)" in e for *_, e in mine)
    assert not MODEL_REASONS & {r for t, _, _, r, _ in rounds["outcomes"] if t == "stealth"}
    assert {n for t, _, _, n in rounds["attempts"] if t == "stealth"} == {"network_error"}


def test_the_masked_endpoint_is_suspended_with_the_upstream_s_words(rounds: dict[str, Any]) -> None:
    assert ("stealth", "suspend") in rounds["decisions"]
    assert rounds["results"][1]["ignore"] == ["stealth"]
    texts = [text + blocks for kind, tag, text, blocks in rounds["alerts"] if tag == "stealth"]
    assert texts and any("network_error" in t for t in texts)
    assert not any(reason in t for t in texts for reason in MODEL_REASONS)
    for tag in HEALTHY:
        assert not any(t == tag for t, _ in rounds["decisions"])


def test_a_relayed_429_keeps_its_cause_in_attempts_outcomes_and_canary_at(rounds: dict[str, Any]) -> None:
    from tasks.at import parse_time, parse_window
    from tasks.at import report_from_connection as report

    cause = f"[Chutes]: {MODEL} is temporarily rate-limited upstream"
    details = [d for t, c, d, _ in rounds["attempts"] if t == "chutes" and c == "structured"]
    assert details and all(cause in (d or "") for d in details)
    rows = [(o, r, e) for t, c, o, r, e in rounds["outcomes"] if t == "chutes" and c == "structured"]
    assert rows and all(o == "transport" and r == "http_429" and cause in e for o, r, e in rows)
    with store.open_store(rounds["db"]) as con:
        answer = report(con, MODEL, parse_time("2026-11-03T08:30Z"), parse_window("2h"))
    findings = [f for ep in answer.endpoints if ep.tag == "chutes" for f in ep.findings]
    assert findings and all(cause in f.evidence for f in findings)
