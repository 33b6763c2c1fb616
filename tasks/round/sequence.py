"""The round's steps, in order, wired once for both engines that run rounds.

    journal start -> load prior -> [probe] footprint, probes (discover, plan, probe) -> failpoint after-probe
    -> [settle] settle (pure; the footprint's alert is one of its inputs)
    -> [save] one transaction, or spooled -> failpoint after-save
    -> [publish] the ignore list (complete rounds only) -> failpoint after-publish
    -> [deliver] the outbox -> journal finish -> the confirmation the round asks for -> RoundSummary

`[step]`: the journal's step (tasks/spool/journal.py), so a round whose process dies is marked `crashed` with it, unless
it had probed: each endpoint's probes are kept beside the journal as they end (tasks/spool/probes.py) and the
next round of the model lands them; a step
that raises marks the round `failed` with the step and its error, in its own process (`steps.record_failure`).
Every step is a plain call: the `canary-round` flow run (flows/round.py) is the round's one Prefect unit (its
state, logs and artifacts), and the history pipeline (demo/pipeline.py) runs the same steps with its probes taken
from its pipeline. An `Engine` says only what differs: where the probes come from, whether publishing makes
artifacts, what guards the round and what follows it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.budget import Footprint
from tasks.core.plan import Probe, make_round_id, plan_probes
from tasks.core.settle import Prior, Settlement, resolve_mode
from tasks.core.types import Attempt, Endpoint, Outcome, RoundInfo, RoundState
from tasks.orchestration.round_slots import RoundSkipped
from tasks.round import steps
from tasks.round.footprint import plan_footprint
from tasks.runtime.clock import utcnow
from tasks.runtime.failpoints import failpoint
from tasks.spool.journal import Journal
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


def run_round(engine: Engine, cfg: CanaryConfig, model: str, round_ts: datetime, *, partial: bool = False,
              confirms: str | None = None, run_id: str | None = None) -> RoundSummary:
    """One round of `model` at `round_ts`: every step in order, each run by `engine` (the module docstring).
    `run_id`: the run that chose `round_ts` (a cycle's flow run; default this round's flow run, else a fresh
    id): the round's save refuses a round id another run's round holds. A step that raises marks the round
    `failed` with its error (`steps.record_failure`), then the error goes on up."""
    round_id = make_round_id(model, round_ts)
    info = RoundInfo(round_id, model, round_ts, resolve_mode(cfg.run_mode, None, cfg.mode), partial,
                     run_id or engine.flow_run_id or uuid.uuid4().hex)
    try:
        with engine.guard() as lease_id:
            journal = Journal.start(cfg.db_path, info, utcnow(), engine.flow_run_id,
                                    str(cfg.run_mode) if cfg.run_mode else None,
                                    lease_id if isinstance(lease_id, str) else None)
            try:
                settled, status, probed, delivered = _steps(engine, cfg, info, journal)
            except Exception as exc:
                steps.record_failure(cfg, journal, exc, engine.artifacts)
                raise
            steps.report_journal_fault(cfg, journal)  # a journal the disk refused: loud, though the round saved
        confirmation = engine.follow_up(cfg, settled, status)
    except RoundSkipped:  # logged by the guard; a skipped round is not a failure
        return RoundSummary.skipped(round_id, model, steps.ignore_in_force(cfg, model))
    return RoundSummary(
        round_id=round_id, model=model, status=status, endpoints=len(probed.endpoints),
        attempts=len(probed.attempts), decisions=tuple(d.action.value + ":" + d.tag for d in settled.decisions),
        ignore=tuple(settled.ignore.ignore), partial=partial, confirms=confirms, confirmation=confirmation,
        delivered=delivered, reprobed=probed.reprobed,
    )


def _steps(engine: Engine, cfg: CanaryConfig, info: RoundInfo, journal: Journal
           ) -> tuple[Settlement, RoundState, RoundProbes, int]:
    """The round's steps from load-prior to deliver, the journal following them (`run_round` wraps them)."""
    round_id, model, round_ts = info.round_id, info.model, info.round_ts
    prior, variable_value = steps.load_prior(cfg, model, round_id, round_ts, info.run_id, engine.sync_variable)
    journal.step("probe")
    footprint = plan_footprint(cfg, prior, model, round_ts)  # within the budget (full without)
    kept = ProbeJournal.beside(journal.path)  # a death from here on loses no probe that ended
    probed = engine.probe(round_id, prior, footprint, kept)
    kept.complete(probed.endpoints, probed.attempts)
    failpoint("after-probe")
    journal.step("settle")
    settled = steps.settle(prior, probed.attempts, probed.endpoints, cfg, round_ts, round_id, info.partial,
                           () if footprint.alert is None else (footprint.alert,), info.run_id, engine.flow_run_id)
    engine.settled(settled)
    journal.step("save")
    settled, status = steps.save(cfg, settled, variable_value)
    failpoint("after-save")
    if status == RoundState.COMPLETE:
        journal.step("publish")
        steps.publish(cfg, settled, engine.artifacts)
        failpoint("after-publish")
    journal.step("deliver")
    delivered = steps.deliver(cfg, round_ts)
    journal.finish()
    return settled, status, probed, delivered
