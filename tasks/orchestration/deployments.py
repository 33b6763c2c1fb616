"""What the canary's deployments need from Prefect beyond their flows: the crashed-cycle trigger and the
concurrency limits. One definition for both ways of deploying: `canary serve` passes these objects to
`to_deployment` (provider_canary/cli/serve_cmd.py), and prefect.yaml spells the same in YAML for `prefect deploy`
(tests/e2e/test_serve.py keeps the two equal).

    crash_trigger("canary-cycle")      # DeploymentEventTrigger: a crashed run of the deployment runs it again
    CYCLE_CONCURRENCY                   # one run of a cycle deployment at a time, the next one queued
    every(timedelta(minutes=30))        # Interval anchored at SCHEDULE_ANCHOR: rounds on :00 and :30, every deploy

The trigger is bound to the deployment (Prefect creates its automation owned by the deployment, with a
`run-deployment` action on that deployment's id): a crash needs no deployment to be inferred from the event,
which a round (a subflow run without a deployment) could never give.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

#: Every schedule counts its intervals from this instant (midnight UTC), never from when it was deployed: a redeploy
#: (a restart of `canary serve`, a `prefect deploy`) keeps the rounds' phase. A 30-minute `interval_min` runs at :00
#: and :30; an interval that divides a day runs at the same clock times every day. prefect.yaml's `anchor_date`.
SCHEDULE_ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)

#: The crash-loop guard, seconds: a reactive trigger fires once, then ignores its events until this window
#: ends, so however often the cycle crashes, the automation adds at most one run per window (one round interval
#: at the default interval_min of 30).
CRASH_WINDOW_S = 1800


def crash_trigger(deployment: str) -> Any:
    """A run of `deployment` that crashed (its process SIGKILLed, OOM-killed, its worker gone) runs the
    deployment again at once, at most once per `CRASH_WINDOW_S`."""
    from prefect.events.schemas.automations import Posture
    from prefect.events.schemas.deployment_triggers import DeploymentEventTrigger

    return DeploymentEventTrigger(
        name=f"{deployment}-crashed",
        description=(f"A run of {deployment} crashed: run it again at once, so the next rounds mark the dead ones "
                     "crashed, land what they spooled and deliver their queued alerts. At most one run per "
                     f"{CRASH_WINDOW_S} s (a crash loop does not become a run loop)."),
        enabled=True,
        posture=Posture.Reactive,
        expect={"prefect.flow-run.Crashed"},
        match_related={"prefect.resource.role": "deployment", "prefect.resource.name": deployment},
        threshold=1,
        within=timedelta(seconds=CRASH_WINDOW_S),
    )


def every(interval: timedelta, parameters: dict[str, Any] | None = None, *, slug: str | None = None) -> Any:
    """An interval schedule anchored at SCHEDULE_ANCHOR (Prefect anchors one at the time it is built otherwise)."""
    from prefect.schedules import Interval

    return Interval(interval, anchor_date=SCHEDULE_ANCHOR, timezone="UTC", parameters=parameters or {}, slug=slug)


def concurrency(limit: int, strategy: str) -> Any:
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    return ConcurrencyLimitConfig(limit=limit, collision_strategy=ConcurrencyLimitStrategy(strategy))


#: A cycle waits for the running one (a confirmation round scheduled by the watcher must still run).
CYCLE_CONCURRENCY = (1, "ENQUEUE")
#: The dead-man check: a run that would overlap the running one is cancelled (the next comes).
CHECK_CONCURRENCY = (1, "CANCEL_NEW")
