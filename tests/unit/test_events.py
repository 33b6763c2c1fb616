"""Decisions and findings as Prefect events (tasks/core/canary_events.py): names, resources, evidence, stable ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tasks.core.canary_events import (
    ALERT_EVENTS,
    DECISION_EVENTS,
    ROUND_CRASHED,
    alert_events,
    crashed_round_events,
    decision_events,
    mode_switch_event,
    round_events,
)
from tasks.core.render.endpoint_table import endpoint_contract_rows
from tasks.core.types import Action, Alert, Contract, ContractResult, Decision, Mode, Outcome, RoundStatus

pytestmark = pytest.mark.unit
T = datetime(2026, 5, 4, 6, 0, tzinfo=UTC)


def test_every_action_has_an_event() -> None:
    assert set(DECISION_EVENTS) == set(Action)
    assert DECISION_EVENTS[Action.SUSPEND] == "canary.endpoint.suspended"


def test_a_suspension_is_an_endpoint_event_with_its_evidence() -> None:
    d = Decision(T, "meta/llama", "deepinfra/fp8", Action.SUSPEND, Mode.ENFORCE, ladder_step=1,
                 until=T + timedelta(days=1), reason="fail x2", evidence_round_ids=("r1", "r2"), round_id="r2")
    (e,) = decision_events([d])
    assert e.event == "canary.endpoint.suspended"
    assert e.resource["prefect.resource.id"] == "canary.endpoint.meta/llama.deepinfra/fp8"
    assert e.resource["canary.mode"] == "enforce"
    assert e.payload == {"action": "suspend", "mode": "enforce", "ladder_step": 1, "until": "2026-05-05T06:00:00+00:00",
                         "reason": "fail x2", "evidence_round_ids": ["r1", "r2"], "round_id": "r2", "actor": "canary"}
    assert e.occurred == T
    assert decision_events([d])[0].id == e.id  # the same decision is the same event (the server dedups by id)


def test_findings_are_events_and_decision_alerts_are_not_repeated() -> None:
    alerts = [
        Alert("probe_weak|m|r2", T, "probe_weak", "m", None, "control passed"),
        Alert("budget|2026-05-04", T, "budget", "m", None, "over budget"),
        Alert("deadman|m|r1", T, "deadman", "m", None, "silent"),
        Alert("m|x|suspend|enforce|t", T, "suspend", "m", "x", "suspended"),  # a decision's: decision_events
        Alert("pin_mismatch|m|x|r2", T, "pin_mismatch", "m", "x", "served by Other"),
    ]
    events = alert_events(alerts)
    assert [e.event for e in events] == ["canary.model.probe_weak", "canary.budget.exceeded", "canary.model.silent",
                                         "canary.endpoint.pin_mismatch"]
    assert events[0].resource["prefect.resource.id"] == "canary.model.m"
    assert events[3].resource["prefect.resource.id"] == "canary.endpoint.m.x"
    assert events[0].payload["evidence"] == "control passed"
    assert set(ALERT_EVENTS) >= {"probe_weak", "deadman", "budget"}
    d = Decision(T, "m", "x", Action.RESTORE, Mode.ENFORCE)
    assert [e.event for e in round_events([d], alerts[:1])] == ["canary.endpoint.restored", "canary.model.probe_weak"]


def test_crashed_rounds_come_from_the_landing_lines() -> None:
    lines = ["landed deferred round m@1 (3 attempts)", "round m@2 crashed during step save",
             "round m@3 was saved; its process died during step publish"]
    (e,) = crashed_round_events("m", lines, T)
    assert e.event == ROUND_CRASHED and e.payload == {"round_id": "m@2", "step": "save"}


def test_a_mode_switch_is_one_event_with_who_and_what_it_released() -> None:
    from provider_canary.cli.mode_switch import mode_switch_alert

    released = [Decision(T, "m", "x", Action.LIFT, Mode.OBSERVE, until=T + timedelta(days=1))]
    alert = mode_switch_alert(Mode.OBSERVE, "ops", ["mode is now observe", "released m x"], ["m", "n"], T)
    e = mode_switch_event(alert, "observe", "enforce", "ops", released)
    assert e.event == "canary.mode.switched" and e.resource["prefect.resource.id"] == "canary.mode"
    assert e.payload == {"mode": "observe", "previous": "enforce", "who": "ops", "models": ["m", "n"],
                         "released": ["m x"], "alert_key": alert.key}
    assert e.id == mode_switch_event(alert, "observe", "enforce", "ops", released).id  # once, however often sent


def test_endpoint_contract_table_rows() -> None:
    results = [ContractResult("r", "m", "b", Contract.TTFT, Outcome.PASS, "ok"),
               ContractResult("r", "m", "a", Contract.REFUSAL, Outcome.FAIL, "refusal_pattern"),
               ContractResult("r", "m", "a", Contract.TTFT, Outcome.PASS, "ok")]
    rows = endpoint_contract_rows(results, {"a": RoundStatus.FAIL, "b": RoundStatus.CLEAN})
    assert rows == [{"endpoint": "a", "status": "fail", "ttft": "pass", "refusal": "fail: refusal_pattern"},
                    {"endpoint": "b", "status": "clean", "ttft": "pass", "refusal": "-"}]
