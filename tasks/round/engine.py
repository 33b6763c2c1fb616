"""What an engine that runs rounds gives the round's steps, and what a round gives back (the steps themselves, in
order, are flows/round.py's `run_round`: the `canary-round` flow runs them, and so does the history pipeline,
provider_canary/demo/pipeline.py, with its probes taken from its pipeline).

* `Engine`        what differs between the engines: where the probes come from, whether publishing makes
                  artifacts, what guards the round and what follows it
* `RoundProbes`   what a round's probing gives the rest of it
* `RoundSummary`  what one round did: the flow's return value and `canary run`'s line
* `planned_probes` the round's probes, planned from its prior's languages, less what the budget skips
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.budget import Footprint
from tasks.core.plan import Probe, plan_probes
from tasks.core.settle import Prior, Settlement
from tasks.core.types import Attempt, Endpoint, Outcome, RoundState
from tasks.spool.probes import ProbeJournal


@dataclass(frozen=True, slots=True)
class RoundSummary:
    """What one round did: the flow's return value and `canary run`'s line (`as_dict`: their keys)."""

    round_id: str
    model: str
    status: RoundState  # complete | deferred | skipped
    endpoints: int = 0
    attempts: int = 0
    decisions: tuple[str, ...] = ()  # "action:tag"
    ignore: tuple[str, ...] | str = ()  # a skipped round: the list in force, or why it cannot be read
    partial: bool = False  # a confirmation round (tasks/round/confirmations.py)
    confirms: str | None = None  # the round id it confirms
    confirmation: Mapping[str, Any] | None = None  # the confirmation this round asks for
    reason: str | None = None  # why a round was skipped
    delivered: int = 0  # alerts sent to Slack (the flow's log line)
    reprobed: int | None = None  # the pipeline's: probes sent at the round's turn

    @classmethod
    def skipped(cls, round_id: str, model: str, ignore: Sequence[str] | str) -> RoundSummary:
        return cls(round_id, model, RoundState.SKIPPED, ignore=ignore if isinstance(ignore, str) else tuple(ignore),
                   reason="the previous round of this model still holds its slot")

    def as_dict(self) -> dict[str, Any]:
        ignore = self.ignore if isinstance(self.ignore, str) else list(self.ignore)
        out: dict[str, Any] = {"round_id": self.round_id, "model": self.model, "endpoints": self.endpoints,
                               "attempts": self.attempts, "decisions": list(self.decisions), "ignore": ignore}
        if self.status == RoundState.SKIPPED:
            return {**out, "skipped": True, "status": str(RoundState.SKIPPED), "reason": self.reason}
        out.update(status=str(self.status), partial=self.partial, confirms=self.confirms,
                   confirmation=self.confirmation)
        if self.reprobed is not None:
            out["reprobed"] = self.reprobed
        return out


@dataclass(frozen=True)
class RoundProbes:
    """What a round's probing gives the rest of it: the endpoints it probed and their attempts, in plan order."""

    endpoints: list[Endpoint]
    attempts: list[Attempt]
    reprobed: int | None = None  # the pipeline's: probes sent at the round's turn (mispredicted, or not sent ahead)


def _nothing_learned(settled: Settlement) -> None:
    return None


def _no_follow_up(cfg: CanaryConfig, settled: Settlement, status: RoundState) -> dict[str, Any] | None:
    return None


@dataclass(frozen=True)
class Engine:
    """What one engine runs the round's steps with (one per round)."""

    #: The round's probing (round id, prior, footprint, where to keep each endpoint's probes as they end:
    #: tasks/spool/probes.py): discover, plan (`planned_probes`), probe.
    probe: Callable[[str, Prior, Footprint, ProbeJournal], RoundProbes]
    #: Publishing makes the Prefect artifacts and events too (False: the ignore list file only; no Prefect API).
    artifacts: bool = True
    #: Two rounds of a model never overlap (the flow's round slot, yielding its lease; RoundSkipped when taken).
    guard: Callable[[], AbstractContextManager[Any]] = nullcontext
    #: Told the settlement as soon as it is settled (the pipeline sends the next rounds' language probes).
    settled: Callable[[Settlement], None] = _nothing_learned
    #: After the round, outside the guard: the confirmation round it asks for
    #: (tasks/round/confirmations.py `follow_up`).
    follow_up: Callable[[CanaryConfig, Settlement, RoundState], Mapping[str, Any] | None] = _no_follow_up
    flow_run_id: str | None = None  # the Prefect flow run holding the round (its journal names it)
    #: Reconcile the operational Variable in the round's first window (False: a cycle did it for its rounds).
    sync_variable: bool = True


def planned_probes(endpoints: Sequence[Endpoint], languages: Sequence[str],
                   previous_languages: Mapping[str, tuple[str, Outcome]], footprint: Footprint) -> list[Probe]:
    """The round's probes: planned from its prior's languages (tasks/core/plan.py), less the endpoints the
    budget's footprint skips."""
    return [p for p in plan_probes(endpoints, languages, previous_languages)
            if p.endpoint.tag not in footprint.skip_tags]
