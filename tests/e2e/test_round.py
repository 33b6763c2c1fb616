"""Real `canary-round` flow runs (Prefect test harness) against the loopback simulator's default fleet.

Time is compressed: the simulator sleeps 0.1x. Its slow starter is stretched to 60 s (6 s here) against a 3 s
TTFT threshold, so it fails whatever the load while healthy endpoints (5 ms) keep a 3 s margin
(tests/support/rounds.py `default_fleet_slow_start`). The real 10 s defaults run in tests/e2e/test_real_defaults.py.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.demo.simulator_process import SimulatorChild
from tasks import store
from tasks.core.plan import make_round_id
from tests.support.rounds import SLOW_START_TTFT_S, child_simulator, default_fleet_slow_start, round_overrides

pytestmark = pytest.mark.e2e

MODEL = "meta-llama/llama-3.3-70b-instruct"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
HEALTHY = [
    "cerebras",
    "deepinfra/fp8",
    "deepinfra/turbo",
    "fireworks",
    "parasail/fp8",
    "sambanova",
    "together",
]
#: (tag, contract) -> (outcome, reasons accepted) for the faulty endpoints of the default fleet, round 1.
EXPECTED_FAULTS: dict[tuple[str, str], tuple[str, set[str]]] = {
    ("hyperbolic/fp8", "opening"): ("fail", {"corrupted_opening"}),
    ("gmicloud/fp8", "language"): ("fail", {"language_mix"}),
    ("lambda/fp8", "ttft"): ("fail", {"ttft_exceeded"}),
    ("friendli", "structured"): ("fail", {"schema_violation", "fenced_json"}),
    ("google-vertex", "refusal"): ("fail", {"content_filter", "empty_reply"}),
    ("groq", "ttft"): ("transport", {"http_429"}),
    ("groq", "structured"): ("transport", {"http_429"}),
    ("chutes/bf16", "refusal"): ("transport", {"stream_cut"}),
    ("chutes/bf16", "structured"): ("transport", {"stream_cut"}),
    ("amazon-bedrock", "refusal"): ("inconclusive", {"control_caught"}),
}
EXPECTED_STATUS = {
    "hyperbolic/fp8": "fail",
    "gmicloud/fp8": "fail",
    "lambda/fp8": "fail",
    "friendli": "fail",
    "google-vertex": "fail",
    "groq": "transport",
    "chutes/bf16": "transport",
    "amazon-bedrock": "clean",
    **{t: "clean" for t in HEALTHY},
}
SUSPENDED_AFTER_TWO = ["friendli", "gmicloud/fp8", "google-vertex", "hyperbolic/fp8", "lambda/fp8"]


sim = child_simulator(default_fleet_slow_start())


def overrides(sim: SimulatorChild, tmp: Path, mode: str = "enforce") -> dict[str, Any]:
    return round_overrides(
        sim,
        tmp,
        MODEL,
        mode=mode,
        refusal_controls=["amazon-bedrock"],
        ttft_s=SLOW_START_TTFT_S,
        read_timeout_s=5.0,
        probe_budget_s=9.0,
    )


def run_round(sim: SimulatorChild, tmp: Path, ts: datetime, run_id: str | None = None, **kw: Any) -> dict[str, Any]:
    from flows.round import canary_round

    sim.reset_counters()  # reset the deterministic fault counters: every round sees the same faults
    return canary_round(model=MODEL, round_ts=ts, overrides=overrides(sim, tmp, **kw), run_id=run_id)


@pytest.fixture(scope="module")
def two_rounds(
    prefect_harness: None, sim: SimulatorChild, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    import os

    tmp = tmp_path_factory.mktemp("round")
    os.environ["OPENROUTER_API_KEY"] = sim.api_key
    first = run_round(sim, tmp, T0, run_id="run-1")
    with store.open_store(tmp / "canary.duckdb") as con:
        rows_after_first = con.execute("SELECT count(*) FROM attempts").fetchone()[0]
        ids_first = sorted(r[0] for r in con.execute("SELECT attempt_id FROM attempts").fetchall())
    rerun = run_round(sim, tmp, T0, run_id="run-1")  # the same run lands its round again (as a cycle's retry does)
    with store.open_store(tmp / "canary.duckdb") as con:
        ids_rerun = sorted(r[0] for r in con.execute("SELECT attempt_id FROM attempts").fetchall())
        outcomes = con.execute(
            "SELECT tag, contract, outcome, reason FROM outcomes WHERE round_id = ?", [first["round_id"]]
        ).fetchall()
        statuses = dict(
            con.execute(
                "SELECT tag, status FROM endpoint_rounds WHERE round_id = ?", [first["round_id"]]
            ).fetchall()
        )
    flow_log = logging.getLogger("prefect.flow_runs")
    level = flow_log.level
    flow_log.setLevel(logging.INFO)  # its INFO lines reach the API (the suite's level is WARNING)
    try:
        second = run_round(sim, tmp, T0 + timedelta(minutes=30))
    finally:
        flow_log.setLevel(level)
    return {
        "tmp": tmp,
        "first": first,
        "rerun": rerun,
        "second": second,
        "rows_after_first": rows_after_first,
        "ids_first": ids_first,
        "ids_rerun": ids_rerun,
        "outcomes": outcomes,
        "statuses": statuses,
    }


def test_one_row_per_attempt_and_a_rerun_replaces_rather_than_duplicates(two_rounds: dict[str, Any]) -> None:
    first = two_rounds["first"]
    assert first["round_id"] == make_round_id(MODEL, T0)
    assert first["endpoints"] == 15
    assert two_rounds["rows_after_first"] == first["attempts"] >= 15 * 4
    assert two_rounds["ids_first"] == two_rounds["ids_rerun"]
    assert len(set(two_rounds["ids_first"])) == len(two_rounds["ids_first"])


@pytest.mark.parametrize(("tag", "contract"), sorted(EXPECTED_FAULTS), ids=lambda v: str(v))
def test_each_faulty_endpoint_fails_the_right_contract_for_the_right_reason(
    two_rounds: dict[str, Any], tag: str, contract: str
) -> None:
    found = {(t, c): (o, r) for t, c, o, r in two_rounds["outcomes"]}
    outcome, reasons = EXPECTED_FAULTS[(tag, contract)]
    assert found[(tag, contract)][0] == outcome
    assert found[(tag, contract)][1] in reasons


@pytest.mark.parametrize("tag", HEALTHY)
def test_every_healthy_endpoint_passes_every_contract(two_rounds: dict[str, Any], tag: str) -> None:
    mine = {c: (o, r) for t, c, o, r in two_rounds["outcomes"] if t == tag}
    assert set(mine) == {"ttft", "refusal", "structured", "language", "opening", "tools"}
    assert all(o == "pass" for o, _ in mine.values()), mine


def test_round_status_per_endpoint(two_rounds: dict[str, Any]) -> None:
    assert two_rounds["statuses"] == EXPECTED_STATUS


def test_two_failing_rounds_in_enforce_put_exactly_the_faulty_endpoints_in_the_ignore_list(
    two_rounds: dict[str, Any],
) -> None:
    import json

    assert two_rounds["first"]["ignore"] == []
    assert two_rounds["rerun"]["decisions"] == []  # the policy never re-decides a round id
    assert sorted(two_rounds["second"]["ignore"]) == SUSPENDED_AFTER_TWO
    assert (
        "groq" not in two_rounds["second"]["ignore"] and "chutes/bf16" not in two_rounds["second"]["ignore"]
    )
    published = json.loads(
        (two_rounds["tmp"] / "published" / "meta-llama-llama-3-3-70b-instruct.json").read_text()
    )
    assert published["ignore"] == SUSPENDED_AFTER_TWO
    assert {e["layer"] for e in published["entries"]} == {"canary"}


def test_a_round_is_one_flow_run_with_a_log_line_per_endpoint(two_rounds: dict[str, Any]) -> None:
    """The round is one Prefect unit (issue 32): no task run per step or per probe; what a probe task run showed is
    one `probe-<tag>` line per endpoint in the round's log (docs/operations.md "What runs")."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterName,
        LogFilter,
        LogFilterFlowRunId,
    )

    name = f"canary-round-{MODEL}-{T0 + timedelta(minutes=30):%Y-%m-%dT%H%M}"  # the second round's (INFO logged)
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["canary-round"])),
                                     flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
        assert runs, name
        ids = [r.id for r in runs]
        assert client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids))) == []
        deadline = time.monotonic() + 30  # the run's logs reach the API in batches
        while True:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)), limit=200)
            lines = [log.message for log in logs if log.message.startswith("probe-")]
            if len(lines) >= 15 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    for tag in ("hyperbolic/fp8", "groq", "lambda/fp8", *HEALTHY):
        assert any(line.startswith(f"probe-{tag}: ") for line in lines), (tag, lines)
    assert any(line.startswith("probe-groq: ") and "http_status 429" in line for line in lines), lines


def test_artifacts_are_published_under_their_keys(two_rounds: dict[str, Any]) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["provider-ignore-meta-llama-llama-3-3-70b-instruct"])
            )
        )
    assert arts, "the ignore-list artifact is missing"
    latest = max(arts, key=lambda a: a.created)
    assert "lambda/fp8" in str(latest.data) and "groq" not in str(latest.data)


def test_observe_mode_records_would_suspend_and_publishes_nothing(
    prefect_harness: None, sim: SimulatorChild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    run_round(sim, tmp_path, T0, mode="observe")
    second = run_round(sim, tmp_path, T0 + timedelta(minutes=30), mode="observe")
    assert second["ignore"] == []
    assert sorted(d.split(":", 1)[1] for d in second["decisions"]) == SUSPENDED_AFTER_TWO
    assert {d.split(":", 1)[0] for d in second["decisions"]} == {"would_suspend"}
