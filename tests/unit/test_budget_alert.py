"""The budget alert as the operator reads it, and the edges of the projection (tasks/core/budget.py): the
whole message compared, so a lost figure, step or sentence shows; the second step's boundary; the confirmation
rounds' spend added to the projection."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tasks.core.budget import HEALTHY_CLEAN_ROUNDS, Projection, footprint, project
from tasks.core.types import EndpointState, RoundStatus

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 1, 23, 59, tzinfo=UTC)
HEALTHY = {"h": EndpointState(model="m/x", tag="h", fail_streak=0, clean_streak=HEALTHY_CLEAN_ROUNDS)}
CLEAN = {"h": RoundStatus.CLEAN}
EVIDENCE = ("projected $7.0000/day > budget_usd_per_day $5.0000 (last 24 h $4.0000, last rounds x rounds per day "
            "$7.0000)")
HEAD = f"Canary over its daily budget\n{EVIDENCE}.\nLowering its own footprint: no language confirmations on " \
       "endpoints that are neither suspended nor failing"
TAIL = ".\nSuspended and failing endpoints are still probed in full.\nonce per UTC day (2026-11-01); raise " \
       "`budget_usd_per_day` or set it to 0 to stop reducing"


def test_the_alert_names_the_model_its_day_the_figures_and_each_step_taken() -> None:
    fp = footprint(Projection(7.0, 4.0, 7.0, 0.5), 5.0, HEALTHY, CLEAN, model="m/x", now=NOW)
    assert fp.skip_tags == {"h"} and fp.evidence == EVIDENCE
    a = fp.alert
    assert a is not None and (a.key, a.kind, a.model, a.tag, a.created_at) == ("budget|2026-11-01", "budget",
                                                                               "m/x", None, NOW)
    assert a.text == HEAD + "; healthy endpoints probed every other round (1 skipped in this round)" + TAIL


def test_confirmations_alone_when_the_rest_fits_the_budget_exactly() -> None:
    fp = footprint(Projection(7.0, 4.0, 7.0, 2.0), 5.0, HEALTHY, CLEAN, model="m/x", now=NOW)
    assert fp.skip_confirmations and fp.skip_tags == frozenset()  # 7 - 2 = 5 is within a budget of 5
    assert fp.alert is not None and fp.alert.text == HEAD + TAIL


def test_the_confirmation_rounds_of_the_last_day_add_to_the_projection() -> None:
    p = project(0.5, {"a": 0.02}, {}, 60, partial_rounds_usd=0.25)
    assert p.last_rounds_usd_per_day == pytest.approx(0.48 + 0.25)
    assert p.usd_per_day == pytest.approx(0.73)
