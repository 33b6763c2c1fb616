"""The `canary-round` flow: one round for one model. The flow only wires tasks; the tasks do the work.

discover -> probe.map (endpoint x contract, pinned, concurrent) -> judge -> land -> decide -> publish -> alert
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import flow, get_run_logger, unmapped
from prefect.task_runners import ThreadPoolTaskRunner

from flows.deadman import notice_silence
from tasks import round_steps as steps
from tasks.clock import utcnow
from tasks.concurrency import RoundSkipped
from tasks.plan import make_round_id, plan_probes
from tasks.secrets import preload_secrets

#: Probe requests in flight at once (I/O bound: threads mostly wait on sockets).
PROBE_WORKERS = 32


def _flow_run_name() -> str:
    from prefect.runtime import flow_run

    params = flow_run.parameters or {}
    model = params.get("model") or "default"
    ts = params.get("round_ts")
    stamp = ts.strftime("%Y-%m-%dT%H%M") if isinstance(ts, datetime) else utcnow().strftime("%Y-%m-%dT%H%M")
    return f"canary-round-{model}-{stamp}"


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
) -> dict[str, Any]:
    """Probe every endpoint of `model`, judge the contracts, apply the policy, publish the ignore list."""
    logger = get_run_logger()
    cfg = steps.resolve_config(config_path, overrides, base_url=base_url, db_path=db_path, mode=mode)
    preload_secrets()  # Secret-block values are known to the redactor before any reply is recorded
    model = model or cfg.models[0]
    round_ts = round_ts or utcnow()
    round_id = make_round_id(model, round_ts)

    try:
        with steps.round_guard(model, logger):
            endpoints = steps.discover.with_options(name=f"discover-{model}")(cfg, model)
            previous = steps.previous_languages(cfg, model)
            steps.warm_up()
            probes = plan_probes(endpoints, cfg.languages, previous)
            futures = steps.probe.map(probes, unmapped(round_id), unmapped(cfg))
            attempts = [a for f in futures for a in f.result()]
            judged = steps.judge(attempts, endpoints, cfg)
            previous_results = steps.land(cfg, model, round_id, round_ts, endpoints, attempts, judged)
            outcome = steps.decide_and_publish(cfg, model, round_id, round_ts, endpoints, judged, mode)
            steps.publish_round_artifact(
                cfg, model, round_id, round_ts, judged, outcome, outcome.mode, previous_results
            )
            notice_silence(cfg, model, round_ts, outcome.ignore)  # the dead-man, if nobody told yet
            delivered = steps.alert(
                cfg, model, round_id, round_ts, judged, outcome, attempts, previous_results
            )
    except RoundSkipped:  # logged by the guard; a skipped round is not a failure
        return {
            "round_id": round_id,
            "model": model,
            "skipped": True,
            "endpoints": 0,
            "attempts": 0,
            "decisions": [],
            "ignore": [],
        }

    logger.info(
        "Round %s: %d endpoints, %d attempts, %d decisions, ignore=%s, alerts sent=%d",
        round_id,
        len(endpoints),
        len(attempts),
        len(outcome.decisions),
        list(outcome.ignore.ignore),
        delivered,
    )
    return {
        "round_id": round_id,
        "model": model,
        "endpoints": len(endpoints),
        "attempts": len(attempts),
        "decisions": [d.action.value + ":" + d.tag for d in outcome.decisions],
        "ignore": list(outcome.ignore.ignore),
    }
