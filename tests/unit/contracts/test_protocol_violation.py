"""A 200 that was not what was asked (`ErrorClass.PROTOCOL`) is `fail` `protocol_violation` in every judge.

Whatever else the attempt shows (text past the ttft threshold, a content_filter finish, a cut, an error
code), the protocol violation decides, so the outcome does not depend on the contract. The registry is
walked, so a contract added later is held to the same rule.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.contracts import language as language_contract
from tasks.core.contracts import opening, probed, spec_of
from tasks.core.types import Contract, ErrorClass, Outcome, Reason

pytestmark = pytest.mark.unit

EVIDENCE = "HTTP 200 content-type (text/html) is not an event stream: '<!DOCTYPE html>' (4097 bytes)"
PROBED = list(probed())

VARIANTS = {
    "html-page": dict(ttft_ms=None, chunk_count=0, finish_reason=None, text=""),
    "bad-frame-after-text": dict(ttft_ms=300.0, chunk_count=3, finish_reason=None, text="*She smiles.* Hel"),
    "late-text": dict(ttft_ms=30_000.0, total_ms=31_000.0, finish_reason=None, text="Late"),
    "filter-finish": dict(finish_reason="content_filter", text=""),
    "with-error-code": dict(error_code=502, finish_reason="error", text="Hi"),
}


@pytest.mark.parametrize("contract", PROBED, ids=str)
@pytest.mark.parametrize("fields", list(VARIANTS.values()), ids=list(VARIANTS))
def test_every_probed_contract_fails_a_protocol_violation(contract: Contract, fields: dict) -> None:
    a = attempt(contract, error_class=ErrorClass.PROTOCOL, error_detail=EVIDENCE, **fields)
    j = spec_of(contract).judge([a], CanaryConfig())
    assert (j.outcome, j.reason) == (Outcome.FAIL, Reason.PROTOCOL_VIOLATION)
    assert "text/html" in j.evidence


def test_language_confirms_a_protocol_violation_by_majority_like_any_failure() -> None:
    bad = attempt(Contract.LANGUAGE, error_class=ErrorClass.PROTOCOL, error_detail=EVIDENCE, text="")
    assert language_contract.needs_confirmation(bad)
    ok = attempt(Contract.LANGUAGE, text="The rain keeps hammering the shutters. " * 6, attempt_no=3)
    j = language_contract.judge([bad, replace(bad, attempt_no=2), ok], CanaryConfig())
    assert (j.outcome, j.reason) == (Outcome.FAIL, Reason.PROTOCOL_VIOLATION)


def test_opening_leaves_out_replies_that_broke_the_protocol() -> None:
    corrupted = dict(text='",*She smiles and waits.')
    broken = [
        attempt(c, error_class=ErrorClass.PROTOCOL, error_detail=EVIDENCE, **corrupted)
        for c in (Contract.TTFT, Contract.REFUSAL, Contract.LANGUAGE)
    ]
    j = opening.judge(broken, CanaryConfig())
    assert (j.outcome, j.reason) == (Outcome.INCONCLUSIVE, Reason.FEW_REPLIES)
    clean = [attempt(c, **corrupted) for c in (Contract.TTFT, Contract.REFUSAL, Contract.LANGUAGE)]
    assert opening.judge(clean, CanaryConfig()).reason == Reason.CORRUPTED_OPENING
