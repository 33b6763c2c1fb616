"""tasks/orchestration/zombie_runs.py: Prefect's zombie-run automation as the canary ships it, and
ops/prefect/zombie-runs.yaml (for `prefect automation create --from-file`) spelling the same for Prefect's default
heartbeat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tasks.orchestration.zombie_runs import DEFAULT_HEARTBEAT_S, NAME, window_s, zombie_automation

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return sorted((_plain(v) for v in value), key=repr)
    return value


def test_the_ops_file_is_the_automation_canary_serve_creates_at_the_default_heartbeat() -> None:
    from prefect.events.schemas.automations import AutomationCore

    shipped = AutomationCore.model_validate(yaml.safe_load((ROOT / "ops/prefect/zombie-runs.yaml").read_text()))
    built = AutomationCore.model_validate(zombie_automation(DEFAULT_HEARTBEAT_S).model_dump())
    assert _plain(shipped.model_dump(mode="json")) == _plain(built.model_dump(mode="json"))


def test_a_run_whose_heartbeats_stop_for_three_beats_is_marked_crashed() -> None:
    from prefect.events.schemas.automations import Posture

    automation = zombie_automation(30)
    trigger = automation.trigger
    assert automation.name == NAME
    assert trigger.posture == Posture.Proactive and trigger.threshold == 1
    assert trigger.after == {"prefect.flow-run.heartbeat"}
    assert {"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Crashed"} <= trigger.expect
    assert trigger.for_each == {"prefect.resource.id"}
    assert trigger.within.total_seconds() == 90  # Prefect's documented automation: 90 s at a 30 s heartbeat
    (action,) = automation.actions
    assert (action.type, str(action.state.value)) == ("change-flow-run-state", "CRASHED")


def test_the_window_follows_the_heartbeat_and_never_goes_below_prefects_minimum() -> None:
    assert window_s(None) == 3 * DEFAULT_HEARTBEAT_S
    assert window_s(60) == 180
    assert window_s(5) == 90  # Prefect beats every 30 s at least
