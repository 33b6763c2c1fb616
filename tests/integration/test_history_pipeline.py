"""The history's probe pipeline against the simulator: rounds probed ahead at their own simulated time, and a
round whose predicted languages turn out wrong gets the probes its real plan asks for (flows/history_pipeline.py).
tests/e2e/test_history.py shows the whole history it builds equals the one flow runs build."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flows.history_pipeline import ProbePipeline, language_outcomes
from simulator.fleet import parse_fleet
from simulator.server import start_simulator
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
