"""Adding a contract is one module and one registry line: a toy contract defined and registered here, in the test,
runs in a real `canary-round` flow against the simulator's default fleet, with no project file edited.

The toy declares its own request (two attempts, a plain user turn), the endpoints it applies to (every one
but groq), a per-endpoint judge and a round-level judge. Its probes go through the probe worker process, which
knows only the built-in contracts: the body is built in the round's process from the registry. The same round
without the toy is the baseline: every other contract's outcome must be the same.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from provider_canary.demo.simulator_process import SimulatorChild
from tasks import store
from tasks.config import CanaryConfig
from tasks.core.contracts import ContractSpec, PeerRound, names, registered
from tasks.core.types import Attempt, Endpoint, Judgement, Outcome
from tests.support.rounds import SLOW_START_TTFT_S, child_simulator, default_fleet_slow_start, round_overrides

pytestmark = pytest.mark.e2e

MODEL = "meta-llama/llama-3.3-70b-instruct"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
TOY = "toy_hello"
SKIPPED = "groq"  # the toy does not apply to it
HEALTHY = ["cerebras", "deepinfra/fp8", "deepinfra/turbo", "fireworks", "parasail/fp8", "sambanova", "together"]


def toy_body(attempt_no: int, language: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"Toy check {attempt_no}: greet the party in {language}."}]}


def toy_judge(attempts: Sequence[Attempt], cfg: CanaryConfig) -> Judgement:
    answered = [a for a in attempts if a.http_status == 200 and a.error_class is None and a.text.strip()]
    if len(answered) == len(attempts):
        return Judgement(Outcome.PASS, "ok", f"replies with text ({len(answered)}/{len(attempts)})")
    if any(a.error_class is not None for a in attempts):
        return Judgement(Outcome.TRANSPORT, "toy_no_reply", f"replies with text ({len(answered)}/{len(attempts)})")
    return Judgement(Outcome.FAIL, "toy_empty", f"replies with text ({len(answered)}/{len(attempts)})")


def toy_peers(peers: PeerRound, cfg: CanaryConfig) -> dict[str, Judgement]:
    return {tag: replace(j, evidence=f"{j.evidence}; peers ({len(peers.judged)})") for tag, j in peers.judged.items()}


def not_skipped(endpoint: Endpoint) -> bool:
    return endpoint.tag != SKIPPED


TOY_SPEC = ContractSpec(
    name=TOY,
    judge=toy_judge,
    body=toy_body,
    max_tokens=64,
    applies_to=not_skipped,
    attempts=(1, 2),
    round_judge=toy_peers,
)

sim = child_simulator(default_fleet_slow_start())


def run_round(sim: SimulatorChild, tmp: Path) -> tuple[dict[str, Any], dict[str, list[tuple[Any, ...]]]]:
    from flows.round import canary_round

    sim.reset_counters()  # the same deterministic faults in both rounds
    overrides = round_overrides(sim, tmp, MODEL, refusal_controls=["amazon-bedrock"], ttft_s=SLOW_START_TTFT_S,
                                read_timeout_s=5.0, probe_budget_s=9.0)
    summary = canary_round(model=MODEL, round_ts=T0, overrides=overrides)
    with store.open_store(tmp / "canary.duckdb") as con:
        rows = {
            "outcomes": con.execute("SELECT tag, contract, outcome, reason, evidence FROM outcomes").fetchall(),
            "attempts": con.execute(
                "SELECT tag, contract, attempt_no, language, http_status FROM attempts"
            ).fetchall(),
        }
    return summary, rows


@pytest.fixture(scope="module")
def rounds(prefect_harness: None, sim: SimulatorChild, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    os.environ["OPENROUTER_API_KEY"] = sim.api_key
    _, baseline = run_round(sim, tmp_path_factory.mktemp("baseline"))
    with registered(TOY_SPEC):
        summary, with_toy = run_round(sim, tmp_path_factory.mktemp("toy"))
    return {"summary": summary, "baseline": baseline, "with_toy": with_toy, "after": names()}


def test_the_toy_contract_has_an_outcome_row_per_endpoint_it_applies_to(rounds: dict[str, Any]) -> None:
    toy = {tag: (o, r, e) for tag, c, o, r, e in rounds["with_toy"]["outcomes"] if c == TOY}
    probed = {tag for tag, *_ in rounds["with_toy"]["outcomes"]}
    assert set(toy) == probed - {SKIPPED}
    assert SKIPPED in probed
    n = len(toy)
    for tag in HEALTHY:
        assert toy[tag] == ("pass", "ok", f"replies with text (2/2); peers ({n})"), tag


def test_the_toy_contract_sends_its_own_attempts(rounds: dict[str, Any]) -> None:
    attempts = [(tag, no, lang, status) for tag, c, no, lang, status in rounds["with_toy"]["attempts"] if c == TOY]
    for tag in HEALTHY:
        assert sorted((no, lang, status) for t, no, lang, status in attempts if t == tag) == [
            (1, "en", 200),
            (2, "en", 200),
        ]
    assert not [a for a in attempts if a[0] == SKIPPED]
    baseline_count = len(rounds["baseline"]["attempts"])
    assert len(rounds["with_toy"]["attempts"]) == baseline_count + len(attempts)


def test_the_other_contracts_outcomes_are_unchanged(rounds: dict[str, Any]) -> None:
    def others(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return sorted((tag, c, o, r) for tag, c, o, r, _ in rows if c != TOY)

    baseline = others(rounds["baseline"]["outcomes"])
    assert baseline and others(rounds["with_toy"]["outcomes"]) == baseline
    assert {c for _, c, *_ in baseline} == {"ttft", "refusal", "structured", "language", "opening", "tools"}


def test_registered_is_scoped(rounds: dict[str, Any]) -> None:
    assert TOY not in rounds["after"]
    assert rounds["summary"]["endpoints"] == 15
