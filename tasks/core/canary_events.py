"""The canary's decisions as Prefect events (pure): what `emit_event` gets, never how it is sent.

    events = decision_events(settled.decisions) + alert_events(settled.alerts)   # after the save, beside the outbox

Every policy decision is `canary.endpoint.<action>` on the resource `canary.endpoint.<model>.<tag>`, its evidence
(reason, evidence round ids, ladder step, until) in the payload. Findings that are not decisions (a weak refusal
probe, a silent model, the budget, a pin that did not hold, a crashed round...) are events too, named below.
The event id is derived from the outbox key (uuid5), so emitting the same decision twice (a delivery rerun) is
one event in the feed. Events are an extra path for Prefect Automations: the outbox (Slack) stays the
delivery that is never lost.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tasks.core.notice_records import Alert
from tasks.core.policy_records import Decision
from tasks.core.suspicion import Suspicion
from tasks.core.vocabulary import Action

#: Decision action -> event name (past tense, as Prefect's own `prefect.flow-run.Completed`).
DECISION_EVENTS: Mapping[Action, str] = {
    Action.SUSPEND: "canary.endpoint.suspended",
    Action.RESTORE: "canary.endpoint.restored",
    Action.EXPIRE: "canary.endpoint.expired",
    Action.LIFT: "canary.endpoint.lifted",
    Action.FLOOR_BLOCKED: "canary.endpoint.floor_blocked",
    Action.WOULD_SUSPEND: "canary.endpoint.would_suspend",
    Action.WOULD_RESTORE: "canary.endpoint.would_restore",
    Action.WOULD_EXPIRE: "canary.endpoint.would_expire",
    Action.WOULD_LIFT: "canary.endpoint.would_lift",
}
#: Alert kind (not a decision) -> event name; the resource is the endpoint when the alert names a tag.
ALERT_EVENTS: Mapping[str, str] = {
    "probe_weak": "canary.model.probe_weak",
    "deadman": "canary.model.silent",
    "budget": "canary.budget.exceeded",
    "pin_mismatch": "canary.endpoint.pin_mismatch",
    "empty_catalog": "canary.model.empty_catalog",
    "store_unreadable": "canary.store.unreadable",
    "mode_switch": "canary.mode.switched",
}
ROUND_CRASHED = "canary.round.crashed"
#: A suspicion the watcher recorded (tasks/core/suspicion.py): a request for probes, never a decision.
SUSPECTED = "canary.endpoint.suspected"
_NAMESPACE = uuid.UUID("6f1d4a52-8c1e-4f7a-9a57-2d3c0e9b7a10")
_CRASHED_LINE = re.compile(r"^round (?P<round_id>.+) crashed during step (?P<step>\S+)$")


@dataclass(frozen=True, slots=True)
class CanaryEvent:
    """The arguments of one `prefect.events.emit_event` call."""

    event: str
    resource: Mapping[str, str]
    occurred: datetime
    id: uuid.UUID
    payload: Mapping[str, Any] = field(default_factory=dict)
    related: tuple[Mapping[str, str], ...] = ()


def endpoint_resource(model: str, tag: str) -> dict[str, str]:
    return {"prefect.resource.id": f"canary.endpoint.{model}.{tag}", "prefect.resource.name": f"{model} {tag}",
            "canary.model": model, "canary.tag": tag}


def model_resource(model: str) -> dict[str, str]:
    return {"prefect.resource.id": f"canary.model.{model}", "prefect.resource.name": model, "canary.model": model}


def _related_model(model: str) -> tuple[Mapping[str, str], ...]:
    return ({"prefect.resource.id": f"canary.model.{model}", "prefect.resource.role": "model"},)


def decision_events(decisions: Iterable[Decision]) -> list[CanaryEvent]:
    out = []
    for d in decisions:
        payload = {
            "action": str(d.action), "mode": str(d.mode), "ladder_step": d.ladder_step,
            "until": d.until.isoformat() if d.until else None, "reason": d.reason,
            "evidence_round_ids": list(d.evidence_round_ids), "round_id": d.round_id, "actor": d.actor,
        }
        resource = {**endpoint_resource(d.model, d.tag), "canary.mode": str(d.mode)}
        out.append(CanaryEvent(DECISION_EVENTS[d.action], resource, d.at, uuid.uuid5(_NAMESPACE, d.decision_id),
                               payload, _related_model(d.model)))
    return out


def alert_events(alerts: Iterable[Alert]) -> list[CanaryEvent]:
    """Events for the alerts that are not decisions (decision alerts come from `decision_events`)."""
    out = []
    for a in alerts:
        name = ALERT_EVENTS.get(a.kind)
        if name is None:
            continue
        resource = endpoint_resource(a.model, a.tag) if a.tag else model_resource(a.model)
        out.append(CanaryEvent(name, resource, a.created_at, uuid.uuid5(_NAMESPACE, a.key),
                               {"kind": a.kind, "alert_key": a.key, "evidence": a.text},
                               _related_model(a.model) if a.tag else ()))
    return out


def crashed_round_events(model: str, lines: Sequence[str], at: datetime) -> list[CanaryEvent]:
    """`canary.round.crashed` for each round the next round marked crashed (tasks/round/write_window.py `land_leftovers`
    lines `round <id> crashed during step <step>`)."""
    out = []
    for line in lines:
        m = _CRASHED_LINE.match(line)
        if m:
            out.append(CanaryEvent(ROUND_CRASHED, model_resource(model), at,
                                   uuid.uuid5(_NAMESPACE, f"crashed|{m['round_id']}|{m['step']}"),
                                   {"round_id": m["round_id"], "step": m["step"]}))
    return out


def suspicion_events(found: Iterable[Suspicion], status: str, confirmation: Mapping[str, Any] | None = None
                     ) -> list[CanaryEvent]:
    """`canary.endpoint.suspected` per recorded suspicion: its signal, class and evidence, its status
    (`scheduled` or `skipped`) and, when one was started, its confirmation round (`confirms`, `flow_run_id`)."""
    out = []
    for s in found:
        payload: dict[str, Any] = {
            "suspicion_id": s.suspicion_id, "signal": str(s.signal),
            "quality": str(s.quality) if s.quality is not None else None, "evidence": s.evidence,
            "requests": s.requests, "failures": s.failures, "failure_rate": s.failure_rate,
            "reference_rate": s.reference_rate, "uptime_recent": s.uptime_recent,
            "uptime_baseline": s.uptime_baseline, "status": status,
        }
        if confirmation is not None:
            payload.update({k: confirmation[k] for k in ("confirms", "flow_run_id") if k in confirmation})
        out.append(CanaryEvent(SUSPECTED, endpoint_resource(s.model, s.tag), s.detected_at,
                               uuid.uuid5(_NAMESPACE, f"suspected|{s.suspicion_id}"), payload,
                               _related_model(s.model)))
    return out


def mode_switch_event(alert: Alert, mode: str, previous: str, who: str, released: Iterable[Decision]) -> CanaryEvent:
    """`canary mode`: `canary.mode.switched` on the resource `canary.mode`, its id derived from the switch's alert
    key (the outbox has the alert; the event is the extra path for automations)."""
    payload = {"mode": mode, "previous": previous, "who": who, "models": alert.model.split(",") if alert.model else [],
               "released": [f"{d.model} {d.tag}" for d in released], "alert_key": alert.key}
    resource = {"prefect.resource.id": "canary.mode", "prefect.resource.name": "canary mode", "canary.mode": mode}
    return CanaryEvent(ALERT_EVENTS["mode_switch"], resource, alert.created_at, uuid.uuid5(_NAMESPACE, alert.key),
                       payload)


def round_events(decisions: Iterable[Decision], alerts: Iterable[Alert]) -> list[CanaryEvent]:
    """A saved round's events: its decisions, then its other findings."""
    return [*decision_events(decisions), *alert_events(alerts)]
