"""A request still waiting for its first text after PARK_AFTER_S stops counting toward `concurrency`
(tasks/probe/loop.py): slow starts do not hold the slots the other requests need, and at most PARKED_FACTOR x
`concurrency` requests run at once. On the real worker process against the simulator."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.config import CanaryConfig
from tasks.core.types import Attempt, Contract, Endpoint
from tasks.probe import worker as probe_worker
from tasks.probe.loop import PARK_AFTER_S, PARKED_FACTOR, ProbeCall
from tasks.probe.worker import dispatcher

pytestmark = [pytest.mark.integration, pytest.mark.timing, pytest.mark.timeout(120)]  # verdicts on start times

MODEL = "acme/tiny-1"
SLOW_S = PARK_AFTER_S * 3  # each slow start's first text comes this long after its request
SLOWER_S = PARK_AFTER_S * 5


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    slow = {"kind": "slow_first_token", "delay_s": SLOW_S, "keepalive_s": 0.5}
    slower = {**slow, "delay_s": SLOWER_S}
    endpoints = [{"tag": f"slow{i}", "provider_name": f"Slow{i}", "faults": [slow]} for i in range(2)]
    endpoints += [{"tag": "lagging", "provider_name": "Lagging", "faults": [slow]}]  # the lane's own: unknown yet
    endpoints += [{"tag": f"slower{i}", "provider_name": f"Slower{i}", "faults": [slower]} for i in range(5)]
    endpoints += [{"tag": f"fast{i}", "provider_name": f"Fast{i}"} for i in range(4)]
    with start_simulator(parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})) as handle:
        yield handle


def attempts(sim: SimulatorHandle, monkeypatch: pytest.MonkeyPatch, tags: list[str], concurrency: int
             ) -> tuple[float, list[Attempt]]:
    monkeypatch.setenv(probe_worker.ENV, "1")
    cfg = CanaryConfig(base_url=sim.base_url, concurrency=concurrency, ttft_s=30.0, read_timeout_s=20.0,
                       probe_budget_s=30.0)
    probe_worker.start()
    t0 = time.time()  # the epoch second the calls were sent: attempts' started_at are UTC datetimes
    futures = [dispatcher().submit(ProbeCall(
        base_url=sim.base_url, endpoint=Endpoint(model=MODEL, tag=tag, provider_name=tag.title()),
        contract=Contract.TTFT, round_id="r-park", attempt_no=1, language="en", cfg=cfg, api_key=sim.api_key))
        for tag in tags]
    done = [f.result(timeout=90) for f in futures]
    assert [a.error_class for a in done] == [None] * len(tags), [a.error_detail for a in done]
    return t0, done


def _start_s(t0: float, attempt: Attempt) -> float:
    """Seconds from the calls' sending to the attempt's start."""
    return attempt.started_at.timestamp() - t0


def test_slow_starts_do_not_hold_the_slots_of_the_requests_behind_them(
    sim: SimulatorHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    t0, done = attempts(sim, monkeypatch, ["slow0", "slow1", "fast0", "fast1", "fast2", "fast3"], concurrency=2)
    by_tag = {a.tag: a for a in done}
    fast_started = [_start_s(t0, by_tag[f"fast{i}"]) for i in range(4)]
    # both slots held by slow starts: the fast ones start once those are parked, long before their first text
    assert max(fast_started) < SLOW_S - 1.0, fast_started
    assert min(fast_started) >= PARK_AFTER_S - 0.5, fast_started  # not before: the bound held until then
    assert all(by_tag[f"slow{i}"].ttft_ms is not None and by_tag[f"slow{i}"].ttft_ms >= SLOW_S * 1000 - 100
               for i in range(2))


def test_parked_or_not_at_most_the_factor_times_the_bound_run_at_once(
    sim: SimulatorHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    t0, done = attempts(sim, monkeypatch, [f"slower{i}" for i in range(5)], concurrency=1)
    spans = sorted((_start_s(t0, a), _start_s(t0, a) + (a.total_ms or 0) / 1000) for a in done)
    running = [sum(1 for s, e in spans if s <= start < e) for start, _ in spans]
    # one at a time, each parked PARK_AFTER_S after its start, the next starting then: PARKED_FACTOR of them run
    # before the first one's first text; the next one waits for the first to end
    assert running[:PARKED_FACTOR] == list(range(1, PARKED_FACTOR + 1)), spans
    assert max(running) == PARKED_FACTOR, spans
    assert spans[PARKED_FACTOR][0] >= spans[0][1] - 0.2, spans


def test_an_endpoint_that_parked_has_its_other_calls_started_at_once_parked(
    sim: SimulatorHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two slots, both taken by calls to a slow endpoint, which park after PARK_AFTER_S; the endpoint's other calls
    then start at once, parked (tasks/probe/call_queue.py), instead of each taking a slot for PARK_AFTER_S in turn, and
    the fast calls behind them start at the same moment."""
    t0, done = attempts(sim, monkeypatch, ["lagging"] * 4 + ["fast0", "fast1"], concurrency=2)
    slow = sorted(_start_s(t0, a) for a in done if a.tag == "lagging")
    fast = sorted(_start_s(t0, a) for a in done if a.tag.startswith("fast"))
    released = [*slow[2:], *fast]  # all when the first two parked (without the lane: the fast ones 2 s later)
    assert max(released) - min(released) < 1.0, (slow, fast)
    assert fast[0] - slow[0] < PARK_AFTER_S + 1.5, (slow, fast)
