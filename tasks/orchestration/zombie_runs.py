"""Prefect's zombie-run automation: a flow run whose heartbeats stop is marked Crashed by the server.

A process killed mid-round (SIGKILL, the OOM killer, a lost host) cannot tell Prefect that its cycle's and rounds'
flow runs ended: they would stay Running. Prefect's documented answer ("How to detect and respond to zombie flows",
docs.prefect.io/v3/advanced/detect-zombie-flows) is a Proactive automation over the flow-run heartbeats every flow
run emits (`PREFECT_FLOWS_HEARTBEAT_FREQUENCY`, 180 s by default, 30 at least): after a run's heartbeat, expect
another heartbeat (or the run's end) within a window; none came, the run is marked Crashed. The server evaluates it,
so it fires with no canary process alive. The canary no longer marks another process's runs itself.

    zombie_automation(heartbeat_s=180)   # the automation, window `WINDOW_BEATS` x the heartbeat
    ensure_zombie_automation()           # create it, or bring the one of that name up to date (`canary serve`)

`canary serve` ensures it at start (the heartbeat frequency it runs with decides the window); with `prefect deploy`
and a worker, create it once from ops/prefect/zombie-runs.yaml (`prefect automation create --from-file`), which
spells the same for the default heartbeat (tests/unit/test_zombie_runs.py keeps the two equal). A `canary run`
against an existing server sends heartbeats too (tasks/prefect_api/server.py); one with a private server does not
(its runs die with its server).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

#: The automation's name (one per Prefect server; `ensure_zombie_automation` finds it by name).
NAME = "canary-zombie-runs"
#: Heartbeats a run may miss before it is marked Crashed: the window is this many heartbeat intervals (Prefect's
#: documented automation: 90 s at a 30 s heartbeat).
WINDOW_BEATS = 3
#: Prefect's flow-run heartbeat interval when PREFECT_FLOWS_HEARTBEAT_FREQUENCY is not set, and its minimum.
DEFAULT_HEARTBEAT_S = 180
MIN_HEARTBEAT_S = 30
#: The events that end a run's wait for its next heartbeat.
EXPECT = ("prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
          "prefect.flow-run.Cancelled", "prefect.flow-run.Crashed")
MESSAGE = "its heartbeats stopped (its process died): marked Crashed by the canary-zombie-runs automation"


def window_s(heartbeat_s: int | None) -> int:
    """The window of a run whose heartbeat comes every `heartbeat_s` (None: Prefect's default)."""
    return WINDOW_BEATS * max(MIN_HEARTBEAT_S, heartbeat_s or DEFAULT_HEARTBEAT_S)


def zombie_automation(heartbeat_s: int | None = None, *, within_s: float | None = None) -> Any:
    """The automation for runs that beat every `heartbeat_s` (`within_s`: its window instead of `window_s`)."""
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    within = within_s if within_s is not None else window_s(heartbeat_s)
    return AutomationCore(
        name=NAME,
        description=(f"A flow run that sent a heartbeat and then neither another one nor its end within {within:g} s "
                     "is marked Crashed: its process died (Prefect's zombie-run automation; the provider canary "
                     "keeps it up to date)."),
        enabled=True,
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect=set(EXPECT),
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=within),
        ),
        actions=[ChangeFlowRunState(name="Crashed", state=StateType.CRASHED, message=MESSAGE, force=False)],
    )


def current_heartbeat_s() -> int | None:
    """The flow-run heartbeat interval of this process's Prefect settings (None: heartbeats off)."""
    from prefect.settings import get_current_settings

    return get_current_settings().flows.heartbeat_frequency


def ensure_zombie_automation(heartbeat_s: int | None = None, *, within_s: float | None = None) -> str:
    """Create the automation on the current Prefect API, or update the one named `NAME` to this definition;
    returns its id."""
    from prefect.client.orchestration import get_client

    wanted = zombie_automation(heartbeat_s if heartbeat_s is not None else current_heartbeat_s(), within_s=within_s)
    with get_client(sync_client=True) as client:
        found = client.read_automations_by_name(NAME)
        if not found:
            return str(client.create_automation(wanted))
        first, *extra = found
        client.update_automation(first.id, wanted)
        for twin in extra:  # two `canary serve` that started at once each created one
            client.delete_automation(twin.id)
        return str(first.id)
