"""The `canary-round` flow: one round for one model, the round's one Prefect unit (its state, logs, artifacts).
The flow only wires; the steps do the work.

    load prior -> discover -> probe (every endpoint at once) -> settle (pure) -> save (one transaction)
    -> publish -> deliver

The steps and their order are tasks/round/sequence.py's `run_round` (the pipelined history runs the same
sequence), each a plain call inside this flow run: no task run per step or per probe (each cost the round
process ~5 ms of CPU and the API server a request or more, and Prefect kept every result until the cycle ended).
What a probe task run showed is the round's log: one line per endpoint (tasks/round/probe_task.py). A journal
file next to the database follows the round from step to step, so a round whose process dies is marked `crashed`
with the step it reached by the next round of its model; a round whose write window cannot be had is spooled to
disk (`deferred`) and landed by the next round that gets the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import flow, get_run_logger

from tasks.config.loading import resolve_config
from tasks.core.budget import Footprint
from tasks.core.plan import by_endpoint
from tasks.core.settle import Prior
from tasks.core.types import RoundState
from tasks.round import confirmations, probe_task, steps
from tasks.round.sequence import Engine, RoundProbes, planned_probes, run_round
from tasks.runtime.clock import utcnow
from tasks.runtime.secrets import preload_secrets
from tasks.spool.probes import ProbeJournal


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
