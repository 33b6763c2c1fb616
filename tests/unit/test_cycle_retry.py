"""A model's round in a cycle is run again only when Prefect's API did not answer (flows/cycle.py,
its condition in tasks/round/steps.py)."""

from __future__ import annotations

import httpx
import pytest
from prefect.exceptions import PrefectHTTPStatusError
from prefect.states import Completed, Failed

from tasks.round.steps import retry_on_orchestrator as _retry_on_orchestrator


def _api_error(code: int) -> PrefectHTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:4200/api/task_runs/")
    return PrefectHTTPStatusError.from_httpx_error(
        httpx.HTTPStatusError("x", request=request, response=httpx.Response(code, request=request))
    )


@pytest.mark.parametrize(
    ("exc", "retry"),
    [(_api_error(503), True), (httpx.ConnectError("refused"), True), (_api_error(404), False),
     (RuntimeError("the round's own bug"), False)],
    ids=["api-503", "api-unreachable", "api-404", "round-bug"],
)
def test_retry_condition(exc: Exception, retry: bool) -> None:
    assert _retry_on_orchestrator(None, None, Failed(data=exc)) is retry


def test_a_completed_round_is_not_retried() -> None:
    assert _retry_on_orchestrator(None, None, Completed(data={"status": "complete"})) is False
