"""A model's round in a cycle is run again only when Prefect's API did not answer (flows/cycle.py: `with_retries`
of tasks/round/steps.py with `is_orchestrator_blip`), after the waits it is given, and then for good."""

from __future__ import annotations

import httpx
import pytest
from prefect.exceptions import PrefectHTTPStatusError

from tasks.probe.http_errors import is_orchestrator_blip
from tasks.round.steps import with_retries


def _api_error(code: int) -> PrefectHTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:4200/api/flow_runs/")
    return PrefectHTTPStatusError.from_httpx_error(
        httpx.HTTPStatusError("x", request=request, response=httpx.Response(code, request=request))
    )


def _failing(errors: list[Exception], result: str = "done") -> tuple[list[int], object]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return result

    return calls, call


@pytest.mark.parametrize(
    ("exc", "retry"),
    [(_api_error(503), True), (httpx.ConnectError("refused"), True), (_api_error(404), False),
     (RuntimeError("the round's own bug"), False)],
    ids=["api-503", "api-unreachable", "api-404", "round-bug"],
)
def test_only_an_orchestrator_blip_is_retried(exc: Exception, retry: bool) -> None:
    calls, call = _failing([exc])
    slept: list[float] = []
    if retry:
        assert with_retries(call, is_orchestrator_blip, (10.0, 30.0), "a round", sleep=slept.append) == "done"
        assert (len(calls), slept) == (2, [10.0])
    else:
        with pytest.raises(type(exc)):
            with_retries(call, is_orchestrator_blip, (10.0, 30.0), "a round", sleep=slept.append)
        assert (len(calls), slept) == (1, [])


def test_the_last_try_raises_what_it_raised() -> None:
    calls, call = _failing([_api_error(503)] * 3)
    slept: list[float] = []
    with pytest.raises(PrefectHTTPStatusError):
        with_retries(call, is_orchestrator_blip, (10.0, 30.0), "a round", sleep=slept.append)
    assert (len(calls), slept) == (3, [10.0, 30.0])


def test_a_round_that_succeeds_is_called_once() -> None:
    calls, call = _failing([])
    assert with_retries(call, is_orchestrator_blip, (10.0, 30.0), "a round", sleep=pytest.fail) == "done"
    assert len(calls) == 1
