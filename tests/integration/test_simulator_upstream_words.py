"""The simulator plays OpenRouter's masked upstream failure and relayed error bodies
(provider_canary/simulator/FLEET.md), and the probe and every judge read them as the real captures
(tests/fixtures/openrouter/) are read."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.config import CanaryConfig
from tasks.core.contracts import probed, spec_of
from tasks.core.types import Attempt, Contract, Endpoint, ErrorClass, Outcome, Reason
from tasks.probe.attempt import probe_once
from tasks.runtime.clock import SystemClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MODEL = "meta-llama/llama-3.3-70b-instruct"
CFG = CanaryConfig(ttft_s=2.0, connect_timeout_s=2.0, read_timeout_s=3.0, probe_budget_s=8.0)
FAULTS = {
    "masked": [{"kind": "masked_upstream_failure"}],
    "maskedjson": [{"kind": "masked_upstream_failure", "applies_to": "all"}],
    "maskedpartial": [{"kind": "masked_upstream_failure", "tokens": 2}],
    "h400": [{"kind": "http_error_before_stream", "status": 400}],
    "h429": [{"kind": "http_error_before_stream", "status": 429}],
}
FLEET = parse_fleet({"models": [{"id": MODEL, "endpoints": [
    {"tag": f"sim/{v}", "provider_name": "Sim", "faults": f} for v, f in FAULTS.items()
]}]})


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET, time_scale=0.1) as handle:
        yield handle


def probe(sim: SimulatorHandle, variant: str, contract: Contract, *, stream: bool = True) -> Attempt:
    endpoint = Endpoint(model=MODEL, tag=f"sim/{variant}", provider_name="Sim")
    with httpx.Client() as client:
        if not stream:  # the probe always streams; ask the simulator for its JSON body the way a client would
            r = client.post(f"{sim.base_url}/chat/completions", headers={"Authorization": f"Bearer {sim.api_key}"},
                            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                                  "provider": {"only": [endpoint.tag], "allow_fallbacks": False}})
            body = r.json()
            assert (r.status_code, "usage" in body) == (200, False)
            choice = body["choices"][0]
            assert (choice["finish_reason"], choice["native_finish_reason"]) == ("stop", "network_error")
            assert choice["message"]["content"] is None
        return probe_once(client, base_url=sim.base_url, api_key=sim.api_key, endpoint=endpoint,
                          contract=contract, round_id="r1", attempt_no=1, language="en", cfg=CFG,
                          clock=SystemClock())


@pytest.mark.parametrize("contract", probed(), ids=str)
def test_masked_upstream_failure_is_one_upstream_error_for_every_contract(sim: SimulatorHandle,
                                                                           contract: Contract) -> None:
    a = probe(sim, "masked", contract)
    assert (a.http_status, a.error_class, a.native_finish_reason, a.text) == (200, None, "network_error", "")
    j = spec_of(contract).judge([a], CFG)
    assert (j.outcome, j.reason) == (Outcome.FAIL, Reason.UPSTREAM_ERROR), j
    assert "native_finish_reason (network_error)" in j.evidence and "provider (Sim)" in j.evidence


def test_masked_failure_as_a_json_body(sim: SimulatorHandle) -> None:
    a = probe(sim, "maskedjson", Contract.STRUCTURED, stream=False)
    assert spec_of(Contract.STRUCTURED).judge([a], CFG).reason == Reason.UPSTREAM_ERROR


def test_masked_failure_after_partial_text_is_still_the_upstream_s_word(sim: SimulatorHandle) -> None:
    a = probe(sim, "maskedpartial", Contract.REFUSAL)
    assert a.text and a.ttft_ms is not None
    j = spec_of(Contract.REFUSAL).judge([a], CFG)
    assert j.reason == Reason.UPSTREAM_ERROR and f"text_chars ({len(a.text)})" in j.evidence


@pytest.mark.parametrize(("variant", "outcome", "reason", "words"), [
    ("h400", Outcome.INCONCLUSIVE, "http_400", "[Sim]: Invalid 'tools': at most 64 tools are allowed."),
    ("h429", Outcome.TRANSPORT, "http_429", f"[Sim]: {MODEL} is temporarily rate-limited upstream"),
])
def test_relayed_error_keeps_the_upstream_s_cause(sim: SimulatorHandle, variant: str, outcome: Outcome,
                                                  reason: str, words: str) -> None:
    a = probe(sim, variant, Contract.TOOLS)
    assert a.error_class is ErrorClass.HTTP_STATUS and a.error_detail and words in a.error_detail
    j = spec_of(Contract.TOOLS).judge([a], CFG)
    assert (j.outcome, j.reason) == (outcome, reason) and words in j.evidence
