"""Edges of the decision core that an operator reads: the evidence lines the probe's wire rules write when a
value is missing (tasks/core/classify.py), a round's status with no outcome (verdicts), the spend projection's
parts (budget) and the error an unknown contract name gets (confirm)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tasks.core.budget import Projection, project
from tasks.core.classify import exchange_judgement, upstream_judgement
from tasks.core.confirm import parse_contracts
from tasks.core.types import Attempt, ErrorClass, RoundStatus
from tasks.core.verdicts import status_of

pytestmark = pytest.mark.unit


def attempt(**kw: object) -> Attempt:
    return Attempt(round_id="r", model="m/x", tag="t", provider_name="T", contract="ttft", attempt_no=1,
                   started_at=datetime(2026, 1, 1, tzinfo=UTC), **kw)  # type: ignore[arg-type]


def test_missing_values_read_none_in_the_evidence_and_a_word_is_one_line() -> None:
    timeout = exchange_judgement(attempt(error_class=ErrorClass.TIMEOUT))
    assert timeout is not None and timeout.evidence == "timeout before any response, total_ms (none)"
    timed = exchange_judgement(attempt(error_class=ErrorClass.TIMEOUT, http_status=200, total_ms=1234.4))
    assert timed is not None and timed.evidence == "timeout after http_status (200), total_ms (1234)"
    masked = upstream_judgement(attempt(http_status=200, native_finish_reason="network\n  error"))
    assert masked is not None
    assert masked.evidence == "native_finish_reason (network error), finish_reason (none), text_chars (0), no usage"


def test_a_round_with_no_outcome_is_inconclusive() -> None:
    assert status_of([]) is RoundStatus.INCONCLUSIVE


def test_the_projection_keeps_each_of_its_parts() -> None:
    assert project(3.0, {"a": 1.0}, {"a": 0.5}, 60) == Projection(24.0, 3.0, 24.0, 12.0)
    assert project(30.0, {"a": 1.0}, {}, 60) == Projection(30.0, 30.0, 24.0, 0.0)


def test_an_unknown_contract_name_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match=r"^'bogus' is not a valid Contract$"):
        parse_contracts(["alpha"], {"alpha": ["ttft", "bogus"]})
