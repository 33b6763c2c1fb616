"""The `canary-watch` flow: live traffic and OpenRouter's own figures as suspicions, confirmed by pinned probes.

    canary-watch (every suspect_confirm_after_s / 3 s, `canary serve` / prefect.yaml)
      per model: listing (one GET) -> watch_model (one write window: resolve, suspect, record)
                 -> a confirmation round of the suspected endpoints, due now

A suspicion never decides anything (docs/design.md "Suspicion"): its confirmation round is an ordinary
partial `canary-round`, so two consecutive failing rounds, the floor, observe/enforce and the budget all
hold; if it fails, the round's own follow-up confirmation (`confirm_after_min`) brings the second round.

* **served** (`cycle_deployment` given, e.g. `canary-cycle/canary-cycle`): the round is a Scheduled run of
  that deployment with `model`, `only`, `contracts` and `confirms` (like tasks/round/confirmations.py's confirmations);
  its flow run id is written on the suspicion rows.
* **in process** (tests, the benchmark): the summary's `confirmation` per model goes back to the caller,
  which runs it with tasks/round/confirmations.py `run_confirmations` (on a StepClock, compressed time).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from prefect import flow

from tasks.clock import utcnow
from tasks.config import CanaryConfig
from tasks.secrets import install_redaction

log = logging.getLogger("canary.watch")

#: Shortest watcher interval, seconds (the Prefect runner polls for scheduled runs every ~10 s anyway).
MIN_INTERVAL_S = 10.0


def watch_interval(cfg: CanaryConfig) -> timedelta:
    """A third of `suspect_confirm_after_s`: a suspicion is seen, and its round scheduled, well within it."""
    return timedelta(seconds=max(MIN_INTERVAL_S, cfg.suspect_confirm_after_s / 3))


def _flow_run_name() -> str:
    from prefect.runtime import flow_run

    ts = (flow_run.parameters or {}).get("now")
    return f"canary-watch-{(ts if isinstance(ts, datetime) else utcnow()).strftime('%Y-%m-%dT%H%M%S')}"


def watch_once(cfg: CanaryConfig, now: datetime, cycle_deployment: str | None = None,
               config_path: str | None = None) -> list[dict[str, Any]]:
    """One look at every configured model (the flow's body, callable without a flow run)."""
    from tasks.errors import CanaryError
    from tasks.watch import fetch_listing, watch_model

    out: list[dict[str, Any]] = []
    for model in cfg.models:
        try:
            listing = fetch_listing(cfg, model)
        except (CanaryError, OSError) as exc:  # the live signal works without the listing
            _logger().warning("watch: no listing for %s (%s); live traffic only", model, str(exc)[:200])
            listing = []
        result = watch_model(cfg, model, now, listing)
        entry: dict[str, Any] = {"model": model, "suspicions": [
            {"tag": s.tag, "signal": str(s.signal), "evidence": s.evidence} for s in result.suspicions],
            "skipped": result.skipped, "resolved": result.resolved, "confirmation": None}
        if result.request is not None:
            entry["confirmation"] = {**result.request.parameters(), "due": result.request.due.isoformat()}
            if cycle_deployment:
                entry["confirmation"]["flow_run_id"] = _schedule(cfg, result, cycle_deployment, config_path)
        out.append(entry)
    return out


def _schedule(cfg: CanaryConfig, result: Any, deployment: str, config_path: str | None) -> str | None:
    from prefect.deployments import run_deployment

    from tasks.core.plan import model_slug
    from tasks.watch import fail_suspicions, note_round

    request = result.request
    try:
        run = run_deployment(
            name=deployment, parameters={"config_path": config_path, **request.parameters()},
            scheduled_time=request.due, timeout=0, as_subflow=False,
            idempotency_key=f"confirm:{request.confirms}",
            flow_run_name=f"canary-confirm-{model_slug(request.model)}-{request.due:%Y-%m-%dT%H%M%S}",
            tags=["canary", "confirmation", "suspicion"],
        )
    except Exception as exc:  # recorded: the suspicion changes nothing, the next full round decides
        fail_suspicions(cfg, result.suspicions, f"could not schedule the round: {type(exc).__name__}: {exc}")
        _logger().warning("watch: could not schedule %s: %s", request.confirms, type(exc).__name__)
        return None
    note_round(cfg, result.suspicions, f"flow run {run.id}")  # type: ignore[union-attr]
    return str(run.id)  # type: ignore[union-attr]


@flow(name="canary-watch", flow_run_name=_flow_run_name)
def canary_watch(
    config_path: str | None = None,
    db_path: str | None = None,
    overrides: dict[str, Any] | None = None,
    now: datetime | None = None,
    cycle_deployment: str | None = None,
) -> dict[str, Any]:
    """Suspect endpoints from live traffic and OpenRouter's uptime; ask for their confirmation rounds."""
    install_redaction()  # the entry point of a deployment's process: hooks before any log
    from tasks.config_loading import resolve_config

    cfg = resolve_config(config_path, overrides, db_path=db_path)
    at = now or utcnow()
    return {"now": at.isoformat(), "models": watch_once(cfg, at, cycle_deployment, config_path)}


def _logger() -> Any:
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:  # called outside a flow run (tests, the benchmark)
        return log


def watch_deployment(cfg: CanaryConfig, config_path: str | None, cycle_deployment: str) -> Any:
    """The `canary-watch` deployment `canary serve` serves next to the cycle."""
    return canary_watch.to_deployment(
        name="canary-watch",
        interval=watch_interval(cfg),
        parameters={"config_path": config_path, "cycle_deployment": cycle_deployment},
        description="Live traffic and OpenRouter's uptime as suspicions: a confirmation round within "
                    "suspect_confirm_after_s; only pinned probes decide.",
        tags=["canary"],
    )
