"""A round steps aside at its tail (tasks/round/probe_task.py `_OpenChains`, tasks/orchestration/admission.py):
probed on the simulator, a round whose healthy endpoints answered and which waits only on a slow one lets the
cycle's next round start, before it ends and not before those answers."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import start_simulator
from tasks.config import CanaryConfig
from tasks.core.plan import by_endpoint, make_round_id, plan_probes
from tasks.orchestration.admission import Admission, stepping_aside
from tasks.probe.discover import fetch_endpoints
from tasks.round.probe_task import probe_round

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MODEL = "meta-llama/llama-3.3-70b-instruct"
LANGS = ("es", "pt", "fr")
SLOW = {"kind": "slow_first_token", "delay_s": 20.0, "keepalive_s": 2.0}  # 1 s a turn at time scale 0.05


def _end(attempt: object) -> datetime:
    return attempt.started_at + timedelta(milliseconds=attempt.total_ms or 0)  # type: ignore[attr-defined]


def test_a_round_waiting_on_its_slow_endpoint_lets_the_next_start(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoints = [{"tag": t, "provider_name": t.upper()} for t in ("a", "b", "c")]
    endpoints.append({"tag": "s", "provider_name": "S", "faults": [SLOW]})
    fleet = parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})
    admission = Admission(probing=1)
    next_in: list[datetime] = []

    def next_round() -> None:
        with admission.admitted():
            next_in.append(datetime.now(UTC))

    with start_simulator(fleet, time_scale=0.05) as sim:
        monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
        cfg = CanaryConfig(base_url=sim.base_url, languages=LANGS, ttft_s=1.0, connect_timeout_s=2.0,
                           read_timeout_s=3.0, probe_budget_s=8.0, concurrency=16)
        with httpx.Client(timeout=10) as client:
            found = fetch_endpoints(client, sim.base_url, sim.api_key, MODEL)
        plans = by_endpoint(plan_probes(found, LANGS, {}))
        waiting = threading.Thread(target=next_round, daemon=True)
        with admission.admitted() as slot, stepping_aside(slot):
            waiting.start()
            attempts, _ = probe_round(plans, make_round_id(MODEL, datetime.now(UTC)), cfg)
            ended = datetime.now(UTC)
        waiting.join(10)

    assert next_in and next_in[0] < ended  # the next round started while this one still probed
    fast = [_end(a) for a in attempts if a.tag != "s"]
    slow = [_end(a) for a in attempts if a.tag == "s"]
    assert fast and slow and max(fast) <= next_in[0] + timedelta(milliseconds=50)  # not before the healthy ones
    assert max(slow) > next_in[0]  # while the slow endpoint's chains were still open
