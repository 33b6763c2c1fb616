"""tasks/prefect_api/subflow_runs.py on the session's Prefect API: a flow run started as a subflow of the running flow
run from a pool's threads, as a cycle starts its rounds. Each is what Prefect's own subflow call makes (a named run
under a tracking task run of the parent, its parameters, its state, its logs), with five requests before its
function runs, all from the calling thread (Prefect's call made ten, its tracking task runs one at a time on one
shared event-loop thread); its exception comes back as a subflow call's would; started again, it gets a tracking
task run of its own."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import httpx
import pytest
from prefect import flow, get_run_logger

from tasks.prefect_api.server import settings_for_flow_runs
from tasks.prefect_api.subflow_runs import SubflowRuns

pytestmark = pytest.mark.e2e

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SEEN: list[tuple[str, str]] = []  # (thread, "METHOD /path") of every request answered, ids folded
ENTERED: dict[str, tuple[str, int]] = {}  # key -> (its thread, len(SEEN)) when the inner flow's function ran
#: What a subflow run's start asks the API in its own thread before its function runs.
START_CALLS = ["POST /api/task_runs/", "POST /api/flow_runs/", "PATCH /api/flow_runs/{id}",
               "POST /api/flow_runs/{id}/set_state", "GET /api/flow_runs/{id}"]


@flow(name="subflow-runs-inner", flow_run_name="never-this-name")
def inner(key: str, fail: bool = False) -> str:
    ENTERED[key] = (threading.current_thread().name, len(SEEN))
    get_run_logger().warning("inner %s ran", key)  # the tests' log level is WARNING
    if fail:
        raise ValueError(f"inner {key} failed")
    return f"done {key}"


@flow(name="subflow-runs-outer")
def outer(keys: list[str], fail: str = "", threads: int = 4) -> dict[str, Any]:
    from prefect.context import FlowRunContext

    runs = SubflowRuns(inner)

    def one(key: str) -> str:
        try:
            return str(runs.run(key, f"inner-{key}", key=key, fail=key == fail))
        except ValueError as exc:
            return f"raised {exc}"

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="round") as pool, runs.heartbeats():
        futures = [pool.submit(copy_context().run, one, k) for k in keys]  # the flow run's context, as a cycle's
        results = [f.result() for f in futures]
    ctx = FlowRunContext.get()
    assert ctx is not None and ctx.flow_run is not None
    return {"id": str(ctx.flow_run.id), "results": results}


@pytest.fixture
def requests() -> Iterator[list[tuple[str, str]]]:
    send = httpx.Client.send

    def recording(self: httpx.Client, request: httpx.Request, **kw: Any) -> httpx.Response:
        response = send(self, request, **kw)
        if response.status_code not in (429, 503):  # the harness's SQLite said "locked": Prefect's client asks again
            SEEN.append((threading.current_thread().name, f"{request.method} {_ID.sub('{id}', request.url.path)}"))
        return response

    SEEN.clear()
    ENTERED.clear()
    httpx.Client.send = recording  # type: ignore[method-assign]
    try:
        yield SEEN
    finally:
        httpx.Client.send = send  # type: ignore[method-assign]


def _runs_under(parent: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    with get_client(sync_client=True) as client:
        return list(client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[UUID(parent)]))))


def _logs_of(run_id: UUID) -> list[str]:
    """The log messages the API holds for `run_id` (the log handler sends them in the background)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=10)
    messages: list[str] = []
    for _ in range(20):
        with get_client(sync_client=True) as client:
            messages = [log.message for log in client.read_logs(
                LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])), limit=50)]
        if messages:
            break
        time.sleep(0.5)
    return messages


def test_subflow_runs_from_a_pool_are_named_runs_under_the_parent(
        prefect_harness: None, requests: list[tuple[str, str]]) -> None:
    from prefect.client.orchestration import get_client

    out = outer(["a", "b", "c", "d"], fail="c")
    assert out["results"] == ["done a", "done b", "raised inner c failed", "done d"]
    runs = {r.name: r for r in _runs_under(out["id"])}
    assert set(runs) == {"inner-a", "inner-b", "inner-c", "inner-d"}  # named at creation: no rename
    assert {n: r.state_type.value for n, r in runs.items()} == {
        "inner-a": "COMPLETED", "inner-b": "COMPLETED", "inner-c": "FAILED", "inner-d": "COMPLETED"}
    assert runs["inner-a"].parameters == {"key": "a", "fail": False}
    with get_client(sync_client=True) as client:
        tracking = client.read_task_run(runs["inner-b"].parent_task_run_id)
    assert (str(tracking.flow_run_id), tracking.name) == (out["id"], "subflow-runs-inner-b")
    assert "inner d ran" in _logs_of(runs["inner-d"].id)

    # before each function ran: five requests, all from its own thread (one of them read the flow's id first)
    before = {}
    for key, (thread, entered) in ENTERED.items():
        before[key] = [call for t, call in requests[:entered] if t == thread]
    assert sorted(calls[0] for calls in before.values()).count("POST /api/flows/") == 1, before
    assert all(calls[-5:] == START_CALLS and len(calls) - 5 == (calls[0] == "POST /api/flows/")
               for calls in before.values()), json.dumps(before, indent=0)
    assert not [c for t, c in requests if t == "RunSyncEventLoopThread" and "task_runs" in c]


def test_a_run_started_again_gets_a_tracking_task_run_of_its_own(prefect_harness: None) -> None:
    from prefect.client.orchestration import get_client

    out = outer(["x", "x"], threads=1)
    assert out["results"] == ["done x", "done x"]
    runs = _runs_under(out["id"])
    assert len(runs) == 2
    with get_client(sync_client=True) as client:
        names = sorted(client.read_task_run(r.parent_task_run_id).name for r in runs)
    assert names == ["subflow-runs-inner-x", "subflow-runs-inner-x-2"]


def test_one_thread_sends_each_runs_heartbeats(prefect_harness: None) -> None:
    """With heartbeats on, each run's first heartbeat is sent when it starts, by the runner's one thread (the
    engine's own per-run thread is off: it cost each run up to 1 s at its end)."""
    from prefect.events.worker import EventsWorker
    from prefect.settings import PREFECT_API_URL

    from tests.support.prefect_runs import read_route_events

    since = datetime.now(UTC)
    with settings_for_flow_runs(heartbeats=True):
        out = outer(["h1", "h2"])
    EventsWorker.drain_all(timeout=10)
    runs = {str(r.id): r.name for r in _runs_under(out["id"])}
    beats: list[dict[str, Any]] = []
    for _ in range(20):  # the server persists events in the background
        beats = [e for e in read_route_events(str(PREFECT_API_URL.value()), "prefect.flow-run.heartbeat", since)
                 if e["resource"]["prefect.resource.id"].removeprefix("prefect.flow-run.") in runs]
        if len(beats) >= 2:
            break
        time.sleep(0.5)
    beat_runs = sorted(e["resource"]["prefect.resource.id"].removeprefix("prefect.flow-run.") for e in beats)
    assert beat_runs == sorted(runs), (beats, runs)  # one each: they ended within the interval
