"""Edges of the confirmation rules (tasks/core/confirm.py) that test_confirm.py's rounds do not reach: the
registry order of a tag's failed contracts, an endpoint with no state, the shortest delay, and the positive
controls' own contracts when refusal is added to them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tasks.config import CanaryConfig
from tasks.core.confirm import hard_failures, needs_confirmation, select_confirmation, with_refusal_controls
from tasks.core.types import Contract, ContractResult, IgnoreList, Mode, Outcome
from tests.unit.test_confirm import MODEL, T0, settle

pytestmark = pytest.mark.unit
C = Contract


def test_a_tags_failed_contracts_come_in_registry_order_not_alphabetical() -> None:
    rows = [ContractResult("r", MODEL, "a", c, Outcome.FAIL, "x") for c in (C.TOOLS, C.LANGUAGE, C.STRUCTURED)]
    assert hard_failures(rows, None) == {"a": (C.STRUCTURED, C.LANGUAGE, C.TOOLS)}


def test_an_endpoint_without_a_state_is_not_confirmed() -> None:
    assert needs_confirmation(None, "new", IgnoreList(MODEL, (), ())) is False


def test_a_one_minute_delay_still_asks_for_a_confirmation() -> None:
    cfg = CanaryConfig(models=(MODEL,), mode=Mode.ENFORCE, refusal_controls=("control",), confirm_after_min=1)
    request = select_confirmation(settle({"beta": {C.STRUCTURED: Outcome.FAIL}}, cfg=cfg), cfg)
    assert request is not None and request.due == T0 + timedelta(minutes=1)
    assert dict(request.contracts) == {"beta": (C.STRUCTURED,)}


def test_refusal_is_added_to_a_controls_own_contracts_and_only_for_controls_present() -> None:
    plan = {"a": (C.REFUSAL,), "control": (C.LANGUAGE,)}
    assert with_refusal_controls(plan, ["control", "gone"], {"a", "control"}) == {
        "a": (C.REFUSAL,), "control": (C.REFUSAL, C.LANGUAGE)}


def test_a_control_already_probing_refusal_keeps_its_plan_as_given() -> None:
    plan = {"a": (C.REFUSAL,), "control": (C.TOOLS, C.REFUSAL)}
    assert with_refusal_controls(plan, ["control"], {"a", "control"}) == plan
