"""Both engines that run rounds run the same steps in the same order (flows/round.py `run_round`): the `canary-round`
flow (its steps and probes plain calls inside the flow run) and the pipelined history (probes from its pipeline).
One round of each against the simulator, with the round's failpoints armed but turned into marks instead of SIGKILL: the
journal's steps and the failpoints they pass, in order, must be the same, and so must the summary's keys."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.runtime import failpoints
from tasks.spool.journal import Journal
from tests.support.rounds import GENEROUS_TTFT_S, round_overrides

pytestmark = pytest.mark.e2e

MODEL = "acme/engines-model"
T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
ARMED = ("after-probe", "after-save", "after-publish")
#: The journal's steps of a complete round, each failpoint (`!name`) where the round passes it.
EXPECTED = ["start", "probe", "!after-probe", "settle", "save", "!after-save", "publish", "!after-publish",
            "deliver"]


FLEET = {"models": [{"id": MODEL, "endpoints": [{"tag": t, "provider_name": t} for t in ("alpha", "beta", "gamma")]}]}


@pytest.fixture
def trace(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The journal's steps as the round writes them, and a `!name` mark where an armed failpoint would kill the
    process (the failpoint's own check runs; only its SIGKILL is replaced by the mark)."""
    seen: list[str] = []
    step = Journal.step
    armed = ["probe", "save", "publish"]  # the journal step each ARMED failpoint follows

    def recording_step(self: Journal, name: str) -> None:
        seen.append(name)
        step(self, name)

    def mark(pid: int, sig: int) -> None:
        assert pid == os.getpid()
        seen.append("!" + ARMED[armed.index(seen[-1])])  # the failpoint after the step the round is in

    monkeypatch.setattr(Journal, "step", recording_step)
    monkeypatch.setattr(failpoints, "os", SimpleNamespace(environ=os.environ, getpid=os.getpid, kill=mark))
    monkeypatch.setenv(failpoints.ENV, ",".join(ARMED))
    return seen


def test_the_flow_and_the_pipelined_history_run_the_same_steps(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trace: list[str]
) -> None:
    with start_simulator(parse_fleet(FLEET)) as sim:
        runs = one_round_each(sim, tmp_path, monkeypatch, trace)

    for engine, (steps, summary) in runs.items():
        assert steps == EXPECTED, engine
        assert summary["status"] == "complete" and summary["endpoints"] == 3, engine
    flow, pipeline = runs["flow"][1], runs["pipeline"][1]
    assert set(pipeline) - set(flow) == {"reprobed"} and set(flow) <= set(pipeline)
    assert {k: flow[k] for k in ("attempts", "decisions", "ignore", "partial")} == {
        k: pipeline[k] for k in ("attempts", "decisions", "ignore", "partial")}


def one_round_each(sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trace: list[str]
                   ) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """Engine -> (the trace of its round, its summary)."""
    from flows.round import canary_round
    from provider_canary.demo.pipeline import no_prefect_api, pipelined_rounds

    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    runs: dict[str, tuple[list[str], dict[str, Any]]] = {}
    ov = round_overrides(sim, tmp_path / "flow", MODEL, ttft_s=GENEROUS_TTFT_S, languages=["en"])
    summary = canary_round(model=MODEL, round_ts=T0, overrides=ov)
    runs["flow"] = (list(trace), summary)

    trace.clear()
    ov = round_overrides(sim, tmp_path / "pipeline", MODEL, ttft_s=GENEROUS_TTFT_S, languages=["en"])
    with no_prefect_api(), pipelined_rounds(ov, MODEL, [T0], sim.api_key) as run_round:
        summary = run_round(0, T0)
    runs["pipeline"] = (list(trace), summary)
    return runs
