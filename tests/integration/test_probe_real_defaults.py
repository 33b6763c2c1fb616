"""The one test on the real defaults (10 s TTFT threshold), in real time: a first token after 12 s with
`: OPENROUTER PROCESSING` keep-alives every 2 s is measured as >= 12 s and fails the ttft contract.
Everything else runs with compressed budgets (a 1 s threshold against a 1.5 s delay)."""

from __future__ import annotations

import httpx
import pytest

from simulator.fleet import parse_fleet
from simulator.server import start_simulator
from tasks.clock import SystemClock
from tasks.config import CanaryConfig
from tasks.core.contracts import ttft
from tasks.core.types import Contract, Endpoint, Outcome
from tasks.probe import probe_once

pytestmark = pytest.mark.integration
MODEL = "acme/real-time-1"
FLEET = parse_fleet(
    {
        "models": [
            {
                "id": MODEL,
                "endpoints": [
                    {
                        "tag": "slowco/fp8",
                        "provider_name": "SlowCo",
                        "faults": [{"kind": "slow_first_token", "delay_s": 12.0, "keepalive_s": 2.0}],
                    }
                ],
            }
        ]
    }
)


def test_a_12_s_first_token_with_keepalives_fails_the_real_10_s_threshold() -> None:
    cfg = CanaryConfig()  # the real defaults: ttft_s=10, read_timeout_s=30, probe_budget_s=60
    assert cfg.ttft_s == 10.0
    endpoint = Endpoint(model=MODEL, tag="slowco/fp8", provider_name="SlowCo")
    with start_simulator(FLEET, time_scale=1.0) as sim, httpx.Client() as client:
        attempt = probe_once(
            client,
            base_url=sim.base_url,
            api_key=sim.api_key,
            endpoint=endpoint,
            contract=Contract.TTFT,
            round_id="r",
            attempt_no=1,
            language="en",
            cfg=cfg,
            clock=SystemClock(),
        )
    assert attempt.http_status == 200 and attempt.error_class is None
    assert attempt.ttft_ms is not None and attempt.ttft_ms >= 12_000
    assert attempt.keepalive_count >= 5  # the keep-alives arrived and did not count as the first token
    verdict = ttft.judge([attempt], cfg)
    assert (verdict.outcome, verdict.reason) == (Outcome.FAIL, "ttft_exceeded")
