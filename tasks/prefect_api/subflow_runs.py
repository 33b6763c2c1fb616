"""A flow run started as a subflow of the current flow run, with the Prefect objects a subflow call makes and
about half its API calls, none of them waiting in line behind another thread's (issue 45).

Prefect's own subflow call (`flow(...)` inside a flow run) first creates the parent's tracking task run on Prefect's one
shared "run sync" event-loop thread (a new async client and a `GET /csrf-token` each time), then, back in the
caller's thread, upserts the flow (`POST /flows/`), creates the run, looks for an earlier run under the same tracking
task (`POST /flow_runs/filter`), renames it (`PATCH`), proposes Running and reads it back: ten requests before the
flow's function runs, and the tracking task runs of every thread in one line on that loop. At 32 rounds starting at
once that line took 6-12 s (benchmarks/profile_round_start.py; docs/operations.md "Performance").

`SubflowRuns(flow)`, one per parent flow run: the flow's id is read once; each `run(key, name, **parameters)` creates
the tracking task run (`<flow name>-<key>`, in the parent run) and the named flow run under it with the caller's own
client, then hands that run to Prefect's engine (`run_flow_sync`), which proposes Running, reads the run, runs the
function (logs, artifacts, crash handling as for any flow run) and proposes the final state. Five requests before the
function runs, in the caller's thread. The operator sees the same: the run under the parent in the UI, its name, its
tracking task, its parameters, its state, logs and artifacts.

Heartbeats (`with runs.heartbeats():`, when Prefect's settings have them on): the engine would give each run a thread
that sends `prefect.flow-run.heartbeat` and sleeps in 1 s steps, and join it when the run ends (up to 1 s more per run,
before its thread takes the next one). Instead one thread sends the same event for every run in progress: when the
run starts, then every heartbeat interval, and stops at once when the block ends. The zombie-run automation
(tasks/orchestration/zombie_runs.py) reads them as it reads the engine's.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator
from typing import Any
from uuid import UUID


class SubflowRuns:
    """Start runs of `flow` as subflows of the flow run this object is used in (module docstring)."""

    def __init__(self, flow: Any) -> None:
        from prefect import Task

        self.flow = flow
        self._unnamed = flow.with_options()
        self._unnamed.flow_run_name = None  # named when created: no rename by the engine
        tracking: Any = Task(name=flow.name, fn=flow.fn, version=flow.version)
        tracking._is_subflow_tracking_task = True  # as Prefect marks its own
        self._tracking = tracking
        self._flow_id: UUID | None = None
        self._lock = threading.Lock()
        self._keys: dict[str, int] = {}
        self._beating: dict[UUID, str] | None = None  # runs in progress, when `heartbeats` sends them
        self._beat = threading.Event()

    def _key(self, key: str) -> str:
        """`key`, then `key-2`, `key-3`... (a run started again gets a tracking task run of its own)."""
        with self._lock:
            n = self._keys[key] = self._keys.get(key, 0) + 1
        return key if n == 1 else f"{key}-{n}"

    def _id_of_flow(self, client: Any) -> UUID:
        from prefect.client.schemas.actions import FlowCreate
        from prefect.client.schemas.objects import Flow

        with self._lock:
            if self._flow_id is None:
                response = client.request("POST", "/flows/", json=FlowCreate(name=self.flow.name).model_dump(
                    mode="json"))
                self._flow_id = Flow.model_validate(response.json()).id
            return self._flow_id

    def create(self, key: str, name: str, parameters: dict[str, Any]) -> Any:
        """The tracking task run in the current flow run and the Pending flow run `name` under it."""
        from prefect.client.schemas.actions import FlowRunCreate
        from prefect.client.schemas.objects import FlowRun, FlowRunPolicy
        from prefect.context import FlowRunContext, SyncClientContext, TagsContext
        from prefect.states import Pending, to_state_create

        parent = FlowRunContext.get()
        if parent is None or parent.flow_run is None:
            raise RuntimeError("SubflowRuns.run is for use inside a flow run")
        tags = TagsContext.get().current_tags
        with SyncClientContext.get_or_create() as ctx:
            client = ctx.client
            flow_id = self._id_of_flow(client)
            dynamic_key = self._key(key)
            task_run = client.create_task_run(task=self._tracking, flow_run_id=parent.flow_run.id,
                                              dynamic_key=dynamic_key, name=f"{self.flow.name}-{dynamic_key}",
                                              extra_tags=tags, state=Pending(), task_inputs={})
            create = FlowRunCreate(
                flow_id=flow_id, flow_version=self.flow.version, name=name,
                parameters=self.flow.serialize_parameters(parameters), context={}, tags=list(tags),
                parent_task_run_id=task_run.id, state=to_state_create(Pending()),
                empirical_policy=FlowRunPolicy(retries=self.flow.retries,
                                               retry_delay=int(self.flow.retry_delay_seconds or 0)),
            )
            response = client.request("POST", "/flow_runs/", json=create.model_dump(mode="json", exclude_unset=True))
        flow_run = FlowRun.model_validate(response.json())
        flow_run.parameters = parameters
        return flow_run

    def run(self, key: str, name: str, /, **kwargs: Any) -> Any:
        """Run the flow with `kwargs` as the subflow run `name` (tracking task `<flow>-<key>`); its result, or
        its exception, as a subflow call gives them."""
        from prefect.flow_engine import run_flow_sync
        from prefect.utilities.callables import get_call_parameters

        from tasks.prefect_api.server import settings_for_flow_runs

        parameters = get_call_parameters(self.flow.fn, (), kwargs)
        flow_run = self.create(key, name, parameters)
        if self._beating is None:
            return run_flow_sync(self._unnamed, flow_run=flow_run, parameters=parameters)
        with self._lock:
            self._beating[flow_run.id] = name
        self._beat.set()  # its first heartbeat now: the zombie-run automation watches it from its start
        try:
            with settings_for_flow_runs(heartbeats=False):  # this object's thread sends them
                return run_flow_sync(self._unnamed, flow_run=flow_run, parameters=parameters)
        finally:
            with self._lock:
                self._beating.pop(flow_run.id, None)

    @contextlib.contextmanager
    def heartbeats(self) -> Iterator[None]:
        """While the block runs, one thread sends the heartbeat of every run in progress (module docstring); nothing
        when Prefect's flow-run heartbeats are off."""
        from prefect.settings import get_current_settings

        every = get_current_settings().flows.heartbeat_frequency
        if every is None:
            yield
            return
        stop = threading.Event()
        self._beating = {}
        period = max(30, every)  # as the engine's: Prefect's minimum

        def beat() -> None:
            from prefect.events import emit_event

            sent: set[UUID] = set()  # the runs that had their first heartbeat
            next_all = time.monotonic()
            while not stop.is_set():
                self._beat.clear()
                with self._lock:
                    runs = dict(self._beating or {})
                if time.monotonic() >= next_all:  # every run's next heartbeat
                    due, next_all = runs, time.monotonic() + period
                else:  # a run that started since: its first
                    due = {k: v for k, v in runs.items() if k not in sent}
                for run_id, name in due.items():
                    with contextlib.suppress(Exception):  # a heartbeat lost is the next one's to make up
                        emit_event(event="prefect.flow-run.heartbeat", resource={
                            "prefect.resource.id": f"prefect.flow-run.{run_id}", "prefect.resource.name": name})
                sent = (sent | set(due)) & set(runs)
                self._beat.wait(max(0.0, next_all - time.monotonic()))

        thread = threading.Thread(target=contextvars.copy_context().run, args=(beat,), name="subflow-heartbeats",
                                  daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            self._beat.set()
            self._beating = None
