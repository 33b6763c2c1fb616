"""The history's probe pipeline against the simulator: rounds probed ahead at their own simulated time, and a
round whose predicted languages turn out wrong gets the probes its real plan asks for
(provider_canary/demo/pipeline.py). tests/e2e/test_history.py shows the whole history it builds equals the one flow runs
build."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from provider_canary.demo.pipeline import ProbePipeline, language_outcomes
from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import start_simulator
from tasks.config import CanaryConfig
from tasks.core.plan import make_round_id, plan_probes
from tasks.core.types import Contract, Outcome

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MODEL = "meta-llama/llama-3.3-70b-instruct"
T0 = datetime(2026, 11, 2, tzinfo=UTC)
LANGS = ("es", "pt", "fr")


def _language(attempts: list, tag: str) -> str:
    (lang,) = {a.language for a in attempts if a.tag == tag and a.contract is Contract.LANGUAGE}
    return str(lang)


def test_a_changed_prediction_is_sent_again_before_the_round_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoints = [{"tag": t, "provider_name": t.upper()} for t in ("a", "b")]
    fleet = parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})
    times = [T0 + k * timedelta(minutes=30) for k in range(4)]
    with start_simulator(fleet, time_scale=0.01) as sim:
        monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)  # the probe task reads it, as in a history
        cfg = CanaryConfig(base_url=sim.base_url, languages=LANGS, ttft_s=1.0, connect_timeout_s=2.0,
                           read_timeout_s=3.0, probe_budget_s=8.0, concurrency=8)
        pipe = ProbePipeline(cfg, MODEL, times, sim.api_key, lookahead=3)
        try:
            pipe.start()
            first = pipe.take(0, {})
            lang_a, lang_b = _language(first.attempts, "a"), _language(first.attempts, "b")
            # Round 0 settled: a failed its language (it keeps it), b passed (it moves on). Rounds 1-3 were
            # sent predicting both pass, so a's language probe of round 1 must be replaced.
            known = {"a": (lang_a, Outcome.FAIL), "b": (lang_b, Outcome.PASS)}
            pipe.learned(known)
            second = pipe.take(1, known)
            counts = pipe.counts
        finally:
            pipe.close()

    planned = plan_probes(second.endpoints, LANGS, known)
    assert len(second.attempts) >= len(planned) and {e.tag for e in second.endpoints} == {"a", "b"}
    assert _language(second.attempts, "a") == lang_a  # kept: the real plan, not the prediction
    assert _language(second.attempts, "b") == LANGS[(LANGS.index(lang_b) + 1) % len(LANGS)]
    assert {a.round_id for a in first.attempts} == {make_round_id(MODEL, times[0])}
    assert {a.round_id for a in second.attempts} == {make_round_id(MODEL, times[1])}
    assert second.reprobed == 0 and counts.wasted >= 1  # replaced when round 0 settled, not at round 1's turn
    assert counts.sent >= len(planned) * 2


def test_language_outcomes_are_what_the_next_plan_reads() -> None:
    from tasks.core.types import ContractResult

    results = [
        ContractResult("r", MODEL, "a", Contract.LANGUAGE, Outcome.FAIL, "language_switch", language="pt"),
        ContractResult("r", MODEL, "a", Contract.TTFT, Outcome.PASS, ""),
        ContractResult("r", MODEL, "b", Contract.LANGUAGE, Outcome.PASS, "", language="es"),
    ]
    assert language_outcomes(results) == {"a": ("pt", Outcome.FAIL), "b": ("es", Outcome.PASS)}


def test_an_endpoint_slow_last_round_is_probed_in_its_own_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request that waits idle for most of its life does not hold a slot of the shared lane: once a round
    showed an endpoint slower than half the TTFT threshold, its next probes go to the slow lane, and their
    answers come back to their rounds as any other."""
    slow_start = {"kind": "slow_first_token", "delay_s": 20.0, "keepalive_s": 2.0}  # 1 s at time scale 0.05
    endpoints = [{"tag": "a", "provider_name": "A"}, {"tag": "s", "provider_name": "S", "faults": [slow_start]}]
    fleet = parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})
    times = [T0 + k * timedelta(minutes=30) for k in range(4)]
    with start_simulator(fleet, time_scale=0.05) as sim:
        monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
        cfg = CanaryConfig(base_url=sim.base_url, languages=LANGS, ttft_s=1.0, connect_timeout_s=2.0,
                           read_timeout_s=3.0, probe_budget_s=8.0, concurrency=8)
        pipe = ProbePipeline(cfg, MODEL, times, sim.api_key, lookahead=2)
        try:
            pipe.start()
            known: dict[str, tuple[str, Outcome]] = {}
            rounds = []
            for n in range(len(times)):
                rounds.append(pipe.take(n, known))
                known = language_outcomes_of(rounds[-1].attempts)
                pipe.learned(known)
                if n == 0:
                    assert pipe.counts.slow == 0  # nothing was known to be slow when rounds 0-2 were sent
            counts = pipe.counts
        finally:
            pipe.close()

    # Round 3 is the one sent once round 0 was known: its probes of the tags round 0 showed slow go to the slow
    # lane. s always is; a is too when a loaded machine made its round-0 answers slower than half the threshold.
    slow_in_round_0 = {a.tag for a in rounds[0].attempts if a.total_ms is not None and a.total_ms > 500}
    assert "s" in slow_in_round_0
    assert counts.slow == sum(1 for a in rounds[3].attempts if a.tag in slow_in_round_0 and a.attempt_no == 1)
    for n, taken in enumerate(rounds):
        assert {a.round_id for a in taken.attempts} == {make_round_id(MODEL, times[n])}
        slow = [a.ttft_ms for a in taken.attempts if a.tag == "s" and a.ttft_ms is not None]
        assert slow and min(slow) >= 900  # the slow lane measures the same slow start
        assert {a.tag for a in taken.attempts} == {"a", "s"}


def language_outcomes_of(attempts: list) -> dict[str, tuple[str, Outcome]]:
    """Each tag's language as passing (the test only needs a stable prior, not the judge)."""
    return {a.tag: (a.language, Outcome.PASS) for a in attempts if a.contract is Contract.LANGUAGE}
