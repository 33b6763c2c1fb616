"""A served confirmation round (a run of the cycle deployment, as tasks/round/confirmations.py and the watcher
schedule it) keeps the `canary-confirm-...` name it was scheduled under when it runs, and publishes under its own
artifact keys: the model's latest `round-` and `endpoints-` artifacts stay the full round's, every endpoint in them.

Real flow runs against the tests' Prefect API and the loopback simulator: a full cycle with a hard fault
(`invalid_json`), then the confirmation it asks for, scheduled on a deployment of `canary-cycle` and run the way a
runner runs it (`run_flow` on the scheduled flow run).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks.core.confirm import ConfirmationRequest
from tasks.core.plan import model_slug
from tasks.core.types import Contract
from tests.support.rounds import GENEROUS_TTFT_S, hard_fault_fleet, round_overrides

pytestmark = pytest.mark.e2e

MODEL = "acme/confirm-named"
SLUG = model_slug(MODEL)
FLEET = hard_fault_fleet(MODEL)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


def latest_artifacts(keys: list[str]) -> dict[str, Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
    latest: dict[str, Any] = {}
    for a in sorted(arts, key=lambda a: a.created):
        latest[a.key] = a
    return latest


def test_a_confirmation_run_keeps_its_name_and_its_own_artifacts(
    prefect_harness: None, sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow

    from flows.cycle import canary_cycle
    from tasks.round.confirmations import schedule_deployment_run

    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    ov = round_overrides(sim, tmp_path, MODEL, ttft_s=GENEROUS_TTFT_S, languages=["en"], min_hosts=1)
    [full] = canary_cycle(overrides=ov)["rounds"]
    assert full["status"] == "complete" and full["confirmation"]["only"] == ["broken"], full

    deployment_id = canary_cycle.to_deployment(name="confirm-names").apply()
    request = ConfirmationRequest(MODEL, full["round_id"], datetime.now(UTC), {"broken": (Contract.STRUCTURED,)})
    run_id = uuid.UUID(schedule_deployment_run(str(deployment_id), request, {"overrides": ov}))
    with get_client(sync_client=True) as client:
        scheduled = client.read_flow_run(run_id)
    assert scheduled.name.startswith(f"canary-confirm-{SLUG}-")

    result = run_flow(canary_cycle, flow_run=scheduled, parameters=scheduled.parameters)  # as a runner runs it
    [confirmation] = result["rounds"]  # type: ignore[index]
    with get_client(sync_client=True) as client:
        ran = client.read_flow_run(run_id)
    assert ran.state_type is not None and ran.state_type.value == "COMPLETED"
    assert ran.name == scheduled.name  # not renamed canary-cycle-<time>
    assert confirmation["partial"] and confirmation["confirms"] == full["round_id"], confirmation

    arts = latest_artifacts([f"round-{SLUG}", f"endpoints-{SLUG}", f"confirm-{SLUG}", f"confirm-endpoints-{SLUG}"])
    assert arts[f"round-{SLUG}"].description == f"Round {full['round_id']}"
    assert arts[f"endpoints-{SLUG}"].description == f"Endpoints x contracts, round {full['round_id']}"
    assert [row["endpoint"] for row in json.loads(arts[f"endpoints-{SLUG}"].data)] == ["alpha", "beta", "broken"]
    assert arts[f"confirm-{SLUG}"].description == f"Round {confirmation['round_id']}"
    assert "broken" in str(arts[f"confirm-endpoints-{SLUG}"].data)
