"""Edges of the contract registry (tasks/core/contracts/__init__.py, spec.py): a contract that may be hard but is
not by default, removing one never registered, the smallest max_tokens a probed contract may have, and a probed
contract without a round judge."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.core.contracts import default_hard, registered, unregister
from tasks.core.contracts.spec import ContractSpec
from tasks.core.types import Judgement, Outcome

pytestmark = pytest.mark.unit


def judge(attempts: Any, cfg: Any) -> Judgement:
    return Judgement(Outcome.PASS, "ok")


def body(*_: Any) -> dict[str, Any]:
    return {}


def test_a_contract_that_may_be_hard_is_not_hard_by_default() -> None:
    with registered(ContractSpec(name="poetry", judge=judge, body=body, max_tokens=1)):
        assert "poetry" not in default_hard()
    with registered(ContractSpec(name="rhyme", judge=judge, body=body, max_tokens=1, hard_by_default=True)):
        assert "rhyme" in default_hard()


def test_removing_a_contract_never_registered_is_no_error() -> None:
    unregister("never-registered")


def test_a_probed_contract_needs_one_token_and_no_round_judge() -> None:
    assert ContractSpec(name="poetry", judge=judge, body=body, max_tokens=1).is_probed
    with pytest.raises(ValueError, match="needs max_tokens > 0"):
        ContractSpec(name="poetry", judge=judge, body=body, max_tokens=0)
    with pytest.raises(ValueError, match="needs a round_judge"):
        ContractSpec(name="echo", judge=judge)
