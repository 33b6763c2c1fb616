"""A confirmation run is scheduled on a deployment of canary-cycle (served) or canary-round with the parameters
it carries from the round that asked for it (tasks/round/confirmations.py `CARRIED`) plus its own: each must be
a parameter of both flows, or Prefect refuses to start the run (SignatureMismatchError: the run crashes, and the
crash trigger runs a whole cycle instead). Twice a round gained a parameter of its own (`run_id`, `in_cycle`)
that the old copy-everything rule passed on to canary-cycle."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import pytest

from flows.cycle import canary_cycle
from flows.round import canary_round
from tasks.core.confirm import ConfirmationRequest
from tasks.core.types import Contract
from tasks.round.confirmations import CARRIED


@pytest.mark.parametrize("flow", [canary_cycle, canary_round], ids=["canary-cycle", "canary-round"])
def test_every_parameter_a_confirmation_run_gets_is_one_the_flow_takes(flow: object) -> None:
    request = ConfirmationRequest("acme/m", "acme/m@2026-12-04T00:00:00Z", datetime.now(UTC),
                                  {"broken": (Contract.TOOLS,)})
    takes = set(inspect.signature(flow.fn).parameters)  # type: ignore[attr-defined]
    assert set(CARRIED) | set(request.parameters()) <= takes


def test_a_rounds_own_parameters_are_not_carried() -> None:
    own = set(inspect.signature(canary_round.fn).parameters) - set(inspect.signature(canary_cycle.fn).parameters)
    assert own, "canary-round has parameters canary-cycle does not take (round_ts, run_id, in_cycle, ...)"
    assert not own & set(CARRIED)
