"""The `canary-round` flow: one round for one model. The flow only wires tasks; the tasks do the work.

    load prior -> discover -> probe.map -> settle (pure) -> save (one transaction) -> publish -> deliver

A journal file next to the database follows the round from step to step, so a round whose process dies is
marked `crashed` with the step it reached by the next round of its model; a round whose write window cannot
be had is spooled to disk (`deferred`) and landed by the next round that gets the store.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar, cast

from prefect import flow, get_run_logger, unmapped
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from flows import confirm
from tasks import probe_steps
from tasks import round_steps as steps
from tasks.budget_step import plan_footprint
from tasks.clock import utcnow
from tasks.concurrency import RoundSkipped
from tasks.core.plan import by_endpoint, make_round_id, plan_probes
from tasks.core.types import RoundInfo
from tasks.failpoints import failpoint
from tasks.secrets import preload_secrets
from tasks.spool import Journal

T = TypeVar("T")
#: Probe tasks (one per endpoint) in flight at once; the requests are bounded by the config's `concurrency`.
PROBE_WORKERS = 32


def plain(value: T) -> T:
    """A task argument Prefect passes through without walking it (`quote`): plain values with no future inside.
    Walking every attempt and recording it as a task input cost settle, save and publish ~10 % of a 40-model
    cycle's GIL time."""
    return cast(T, quote(value))


def _flow_run_name() -> str:
    from prefect.runtime import flow_run

    params = flow_run.parameters or {}
    model = params.get("model") or "default"
    ts = params.get("round_ts")
    stamp = ts.strftime("%Y-%m-%dT%H%M") if isinstance(ts, datetime) else utcnow().strftime("%Y-%m-%dT%H%M")
    kind = "confirm" if params.get("confirms") else "round"  # a confirmation round (flows/confirm.py)
    return f"canary-{kind}-{model}-{stamp}"


@flow(
    name="canary-round",
    flow_run_name=_flow_run_name,
    task_runner=ThreadPoolTaskRunner(max_workers=PROBE_WORKERS),  # type: ignore[arg-type]
)
def canary_round(
    model: str | None = None,
    mode: str | None = None,
    config_path: str | None = None,
    base_url: str | None = None,
    db_path: str | None = None,
    round_ts: datetime | None = None,
    overrides: dict[str, Any] | None = None,
    refresh_snapshot: bool = True,
    only: list[str] | None = None,  # confirmation round (flows/confirm.py): probe only these tags,
    contracts: dict[str, list[str]] | None = None,  # only these contracts per tag,
    confirms: str | None = None,  # confirming the hard failures of this round id
) -> dict[str, Any]:
    """Probe every endpoint of `model`, judge the contracts, apply the policy, publish the ignore list.

    With `only`/`contracts` it is a confirmation round: a partial round probing just those (flows/confirm.py).
    `refresh_snapshot`: republish the analysts' snapshot at the end (a cycle does it once for all models).
    """
    logger = get_run_logger()
    cfg = steps.resolve_config(config_path, overrides, base_url=base_url, db_path=db_path, mode=mode)
    preload_secrets()  # Secret-block values are known to the redactor before any reply is recorded
    model = model or cfg.models[0]
    round_ts = round_ts or utcnow()
    round_id = make_round_id(model, round_ts)
    plan = confirm.parse_plan(only, contracts)  # None: a full round
    summary: dict[str, Any] = {"round_id": round_id, "model": model, "endpoints": 0, "attempts": 0,
                               "decisions": [], "ignore": []}
    try:
        with steps.round_guard(model, logger, cfg.db_path):
            journal = Journal.start(cfg.db_path, RoundInfo(round_id, model, round_ts, cfg.mode), utcnow(),
                                    steps.flow_run_id())
            prior, variable_value = steps.load_prior(cfg, model, round_id, round_ts, mode)
            journal.step("probe")
            endpoints = steps.discover.with_options(name=f"discover-{model}")(cfg, model)
            probe_steps.warm_up_once()
            footprint = plan_footprint(cfg, prior, model, round_ts)  # within the budget (full without one)
            probes = [p for p in plan_probes(endpoints, cfg.languages, prior.previous_languages)
                      if p.endpoint.tag not in footprint.skip_tags]
            probes, endpoints = confirm.narrow(probes, endpoints, plan)
            futures = probe_steps.probe.map(by_endpoint(probes), unmapped(round_id), unmapped(cfg),
                                            unmapped(footprint))
            attempts = [a for f in futures for a in f.result()]
            failpoint("after-probe")
            journal.step("settle")
            settled = steps.settle(plain(prior), plain(attempts), plain(endpoints), cfg, round_ts, round_id,
                                   plan is not None)
            if footprint.alert is not None:
                settled = replace(settled, extra_alerts=(footprint.alert,))
            journal.step("save")
            settled, status = steps.save(cfg, plain(settled), mode, variable_value)
            failpoint("after-save")
            if status == "complete":
                journal.step("publish")
                steps.publish(cfg, plain(settled))
                failpoint("after-publish")
            journal.step("deliver")
            delivered = steps.deliver(cfg, round_ts)
            journal.finish()
            steps.report_journal_fault(cfg, journal)  # a journal the disk refused: loud, once the round is done
        confirmation = confirm.follow_up(cfg, settled, status)  # a confirmation round of the hard failures
        if refresh_snapshot:
            steps.refresh_snapshot(cfg)
    except RoundSkipped:  # logged by the guard; a skipped round is not a failure
        return {**summary, "skipped": True, "status": "skipped", "ignore": steps.ignore_in_force(cfg, model),
                "reason": "the previous round of this model still holds its slot"}

    logger.info(
        "Round %s %s: %d endpoints, %d attempts, %d decisions, ignore=%s, alerts sent=%d", round_id, status,
        len(endpoints), len(attempts), len(settled.decisions), list(settled.ignore.ignore), delivered,
    )
    return {
        **summary,
        "status": status,
        "endpoints": len(endpoints),
        "attempts": len(attempts),
        "decisions": [d.action.value + ":" + d.tag for d in settled.decisions],
        "ignore": list(settled.ignore.ignore),
        "partial": plan is not None,
        "confirms": confirms,
        "confirmation": confirmation,
    }
