"""The records of a `canary at` report (tasks/at/report.py builds them; the CLI prints them or their JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from tasks.at.frames import jsonable


@dataclass(frozen=True)
class Finding:
    """One failing or transport outcome of an endpoint in one round (inconclusives are not evidence)."""

    round_ts: datetime
    contract: str
    outcome: str
    reason: str
    evidence: str
    language: str | None
    excerpt: str


@dataclass(frozen=True)
class EndpointReport:
    tag: str
    provider_name: str
    rounds: int
    statuses: dict[str, int]
    status_at_t: str | None  # the status in the round nearest to T
    findings: tuple[Finding, ...]
    more_findings: int
    #: Start of the failing run that includes the round nearest to T (transport/inconclusive rounds do not
    #: break it, as in the policy); None when not failing at T. Earlier than the lookback: the lookback start.
    failing_since: datetime | None = None

    @property
    def failing_rounds(self) -> int:
        return self.statuses.get("fail", 0)


@dataclass(frozen=True)
class InForce:
    tag: str
    layer: str  # builtin | operational | canary | shadow
    reason: str
    since: datetime | None
    until: datetime | None


@dataclass(frozen=True)
class Report:
    model: str
    time: datetime
    since: datetime
    until: datetime
    round_ids: tuple[str, ...]
    nearest_round: str | None
    endpoints: tuple[EndpointReport, ...]
    suspects: tuple[str, ...]
    in_force: tuple[InForce, ...]
    ignore_at_t: tuple[str, ...]
    decisions: tuple[dict[str, Any], ...]
    exclusion_changes: tuple[dict[str, Any], ...]
    route_events: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = field(default=())
    suspicions: tuple[dict[str, Any], ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        return jsonable(asdict(self))
