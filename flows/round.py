"""The `canary-round` flow: one round for one model, the round's one Prefect unit (its state, logs, artifacts).
The flow only wires; the steps do the work (tasks/round/steps.py), in this order (`run_round`, `_steps` below):

    journal start -> load prior -> [probe] footprint, probes (discover, plan, probe) -> failpoint after-probe
    -> [settle] settle (pure; the footprint's alert is one of its inputs)
    -> [save] one transaction, or spooled -> failpoint after-save
    -> [publish] the ignore list (complete rounds only) -> failpoint after-publish
    -> [deliver] the outbox -> journal finish -> the confirmation the round asks for -> RoundSummary

`[step]`: the journal's step (tasks/spool/journal.py), so a round whose process dies is marked `crashed` with it by
the next round of its model, unless it had probed: each endpoint's probes are kept beside the journal as they end
(tasks/spool/probes.py) and the next round of the model lands them; a step that raises marks the round `failed` with
the step and its error, in its own process (`steps.record_failure`); a round whose write window cannot be had is
spooled to disk (`deferred`) and landed by the next round that gets the store.

Two engines run these steps (tasks/round/engine.py `Engine` says only what differs: where the probes come from,
whether publishing makes artifacts, what guards the round and what follows it): this flow, each step a plain call
inside its flow run (no task run per step or per probe: each cost the round process ~5 ms of CPU and the API server
a request or more, and Prefect kept every result until the cycle ended), and the history pipeline
(provider_canary/demo/pipeline.py), its probes taken from its pipeline. What a probe task run showed is the round's log:
one line per endpoint (tasks/round/probe_task.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from prefect import flow, get_run_logger

from tasks.config import CanaryConfig
from tasks.config.loading import resolve_config
from tasks.core.budget import Footprint
from tasks.core.plan import by_endpoint, make_round_id
from tasks.core.settle import Prior, Settlement, resolve_mode
from tasks.core.types import RoundInfo, RoundState
from tasks.orchestration.round_slots import RoundSkipped
from tasks.round import confirmations, probe_task, steps
from tasks.round.engine import Engine, RoundProbes, RoundSummary, planned_probes
from tasks.round.footprint import plan_footprint
from tasks.runtime.clock import utcnow
from tasks.runtime.failpoints import failpoint
from tasks.runtime.secrets import preload_secrets
from tasks.spool.journal import Journal
from tasks.spool.probes import ProbeJournal


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


def round_run_name(model: str | None, round_ts: datetime | None, confirms: str | None = None) -> str:
    """`canary-round-<model>-<round time>`, or `canary-confirm-...` for a confirmation round
    (tasks/round/confirmations.py): the round's flow run in the UI."""
    stamp = (round_ts if isinstance(round_ts, datetime) else utcnow()).strftime("%Y-%m-%dT%H%M")
    return f"canary-{'confirm' if confirms else 'round'}-{model or 'default'}-{stamp}"


def _flow_run_name() -> str:
    from prefect.runtime import flow_run

    params = flow_run.parameters or {}
    return round_run_name(params.get("model"), params.get("round_ts"), params.get("confirms"))


@flow(name="canary-round", flow_run_name=_flow_run_name)
def canary_round(
    model: str | None = None,
    mode: str | None = None,
    config_path: str | None = None,
    base_url: str | None = None,
    db_path: str | None = None,
    round_ts: datetime | None = None,
    overrides: dict[str, Any] | None = None,
    refresh_snapshot: bool = True,
    only: list[str] | None = None,  # confirmation round (tasks/round/confirmations.py): probe only these tags,
    contracts: dict[str, list[str]] | None = None,  # only these contracts per tag,
    confirms: str | None = None,  # confirming the hard failures model_id this round id
    run_id: str | None = None,  # the run that chose round_ts (the cycle's flow run); default this flow run
    in_cycle: bool = False,  # run by a cycle of this process: it holds the slot and synced the Variable
) -> dict[str, Any]:
    """Probe every endpoint model_id `model`, judge the contracts, apply the policy, publish the ignore list.

    With `only`/`contracts` it is a confirmation round: a partial round probing just those
    (tasks/round/confirmations.py).
    `refresh_snapshot`: republish the analysts' snapshot at the end (a cycle does it once for all models).
    `run_id`: the run that chose `round_ts`; its round's save refuses a round id another run's round holds (the
    cycle passes its own flow run, so a round it runs again after an orchestrator blip replaces its rows).
    `in_cycle`: a cycle of this process runs it (flows/cycle.py): the cycle holds the model's round slot, read
    the secrets and reconciled the operational Variable once for all its rounds.
    """
    logger = get_run_logger()
    cfg = resolve_config(config_path, overrides, base_url=base_url, db_path=db_path, mode=mode)
    if not in_cycle:
        preload_secrets()  # Secret-block values are known to the redactor before any reply is recorded
    model_id = model or cfg.models[0]
    plan = confirmations.parse_plan(only, contracts)  # None: a full round

    def probe_round(round_id: str, prior: Prior, footprint: Footprint, kept: ProbeJournal) -> RoundProbes:
        endpoints = steps.discover(cfg, model_id)
        probe_task.warm_up()
        probes = planned_probes(endpoints, cfg.languages, prior.previous_languages, footprint)
        probes, endpoints = confirmations.narrow(probes, endpoints, plan)
        attempts, lines = probe_task.probe_round(by_endpoint(probes), round_id, cfg, footprint,
                                                 on_endpoint=kept.endpoint)
        for line in lines:
            logger.info("%s", line)
        return RoundProbes(endpoints, attempts)

    engine = Engine(probe=probe_round, guard=lambda: steps.round_guard(model_id, logger, cfg.db_path),
                    follow_up=confirmations.follow_up, flow_run_id=steps.flow_run_id(), sync_variable=not in_cycle)
    summary = run_round(engine, cfg, model_id, round_ts or utcnow(), partial=plan is not None, confirms=confirms,
                        run_id=run_id)
    if summary.status != RoundState.SKIPPED:
        if refresh_snapshot:
            steps.refresh_snapshot(cfg)
        logger.info("Round %s %s: %d endpoints, %d attempts, %d decisions, ignore=%s, alerts sent=%d",
                    summary.round_id, summary.status, summary.endpoints, summary.attempts, len(summary.decisions),
                    list(summary.ignore), summary.delivered)
    return summary.as_dict()
