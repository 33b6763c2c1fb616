"""Confirmation rounds in the shell: the flow asks for one after a round with hard failures, and it runs.

The selection is pure (tasks/core/confirm.py); this module wires it:

    plan = parse_plan(only, contracts)                  # flow parameters -> None (full round) or tags/contracts
    probes, endpoints = narrow(probes, endpoints, plan) # a confirmation round probes only those
    summary["confirmation"] = follow_up(cfg, settled, status)    # after the round

A confirmation is a `canary-round` flow run whose parameters say what it is (`only=[tags]`,
`contracts={tag: [...]}`, `confirms=<round id>`), so the Prefect UI shows it among the rounds:

* **deployment runs** (`canary serve`, prefect.yaml): `follow_up` creates a run of the same deployment with
  `run_deployment(..., scheduled_time=due)`; it shows as Scheduled in the UI and the runner/worker starts it
  at `due` (its `round_ts` is the time it runs). The summary says `flow_run_id`.
* **in-process runs** (`canary run`, `canary demo`, the compressed-clock history): nothing is scheduled; the
  summary's `confirmation` (parameters + `due`) goes back to the caller, which runs it with
  `run_confirmations(summary, run, clock)`: wait on the round's clock until `due` (a `StepClock` is
  advanced, a real clock slept on), run it, and so on while a confirmation asks for another (`fail_rounds`
  above 2) before the next full round.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.confirm import ConfirmationRequest, narrow_probes, parse_contracts, select_confirmation
from tasks.core.plan import Probe, model_slug
from tasks.core.settle import Settlement
from tasks.core.types import Endpoint, RoundState
from tasks.runtime.clock import Clock, StepClock

log = logging.getLogger("canary.confirm")

__all__ = ["follow_up", "narrow", "parse_plan", "run_confirmations", "wait_until"]


def parse_plan(only: Sequence[str] | None, contracts: Mapping[str, Sequence[str]] | None
               ) -> dict[str, tuple[str, ...]] | None:
    """The flow's `only`/`contracts` parameters -> contracts per tag, None for a full round."""
    return parse_contracts(only, contracts)


def narrow(probes: Sequence[Probe], endpoints: Sequence[Endpoint], plan: Mapping[str, Sequence[str]] | None
           ) -> tuple[list[Probe], list[Endpoint]]:
    """A confirmation round's probes and the endpoints it probes (a full round: everything)."""
    if plan is None:
        return list(probes), list(endpoints)
    kept = narrow_probes(probes, plan)
    tags = {p.endpoint.tag for p in kept}
    return kept, [e for e in endpoints if e.tag in tags]


def follow_up(cfg: CanaryConfig, settled: Settlement, status: RoundState) -> dict[str, Any] | None:
    """After a round: the confirmation it asks for (parameters and `due`), scheduled as a deployment run when
    this round is one; None when nothing needs confirming. Never fails the round."""
    if status not in (RoundState.COMPLETE, RoundState.DEFERRED):
        return None
    request = select_confirmation(settled, cfg)
    if request is None:
        return None
    out: dict[str, Any] = {**request.parameters(), "due": request.due.isoformat()}
    deployment_id = _deployment_id()
    if deployment_id is not None:
        try:
            out["flow_run_id"] = schedule_deployment_run(deployment_id, request, _parent_parameters())
        except Exception as exc:  # the round is done; a lost confirmation only delays the decision
            _logger().warning("could not schedule the confirmation of %s: %s: %s", request.confirms,
                              type(exc).__name__, str(exc)[:200])
    _logger().info("Confirmation of %s due %s: %s%s", request.confirms, out["due"], out["contracts"],
                   f" (flow run {out['flow_run_id']})" if "flow_run_id" in out else "")
    return out


#: What a confirmation run takes from the round that asked for it: where and how to run, never the round's own
#: (`round_ts`, `run_id`, `in_cycle`, ...: the run's time is when it starts, it is its own run, and a cycle
#: deployment's flow would refuse a parameter it does not have). Both flows a confirmation can run as
#: (canary-cycle, canary-round) take each of these: tests/unit/test_confirmation_parameters.py.
CARRIED = ("config_path", "model", "mode", "base_url", "db_path", "overrides", "refresh_snapshot")


def schedule_deployment_run(deployment_id: str, request: ConfirmationRequest, parent: Mapping[str, Any]) -> str:
    """A Scheduled run of the deployment at `request.due` with the parent's `CARRIED` parameters plus the
    confirmation's. Idempotent per confirmed round."""
    from uuid import UUID

    from prefect.deployments import run_deployment

    params = {k: v for k, v in parent.items() if k in CARRIED}
    params.update(request.parameters())
    run = run_deployment(
        name=UUID(str(deployment_id)),
        parameters=params,
        scheduled_time=request.due,
        timeout=0,
        as_subflow=False,
        idempotency_key=f"confirm:{request.confirms}",
        flow_run_name=f"canary-confirm-{model_slug(request.model)}-{request.due:%Y-%m-%dT%H%M}",
        tags=["canary", "confirmation"],
    )
    return str(run.id)  # type: ignore[union-attr]


def run_confirmations(
    summary: Mapping[str, Any],
    run: Callable[..., dict[str, Any]],
    clock: Clock,
    *,
    before: datetime | None = None,
) -> list[dict[str, Any]]:
    """Run in this process the confirmation `summary` asks for (unless a deployment run was scheduled), on
    `clock`, then any that one asks for in turn, while they fall before `before` (the next full round).
    `run(round_ts=..., only=..., contracts=..., confirms=...)` runs one round; returns their summaries."""
    done: list[dict[str, Any]] = []
    request = summary.get("confirmation")
    while request and not request.get("flow_run_id"):
        due = datetime.fromisoformat(request["due"])
        if before is not None and due >= before:
            break
        wait_until(clock, due)
        result = run(round_ts=due, only=request["only"], contracts=request["contracts"],
                     confirms=request["confirms"])
        done.append(result)
        request = result.get("confirmation")
    return done


def wait_until(clock: Clock, due: datetime) -> None:
    """Until `due` on `clock`: a StepClock (compressed time) is advanced, a real clock slept on."""
    seconds = (due - clock.now()).total_seconds()
    if seconds <= 0:
        return
    if isinstance(clock, StepClock):
        clock.advance(timedelta(seconds=seconds))
    else:
        clock.sleep(seconds)


def _deployment_id() -> str | None:
    from prefect.runtime import deployment

    value = deployment.id
    return str(value) if value else None


def _parent_parameters() -> dict[str, Any]:
    from prefect.runtime import flow_run

    return dict(flow_run.parameters or {})


def _logger() -> Any:
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return log
