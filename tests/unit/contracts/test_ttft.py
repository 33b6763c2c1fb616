"""TTFT contract: golden table (Gatus-style: outcome, reason and the resolved value in the evidence)."""

from __future__ import annotations

import pytest
from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.contracts import ttft
from tasks.core.types import Contract, ErrorClass, Outcome

pytestmark = pytest.mark.unit
CFG = CanaryConfig(ttft_s=10.0)

CASES = [
    ("fast_first_text", dict(ttft_ms=850.0), Outcome.PASS, "ok", "ttft_ms (850) <= 10000"),
    ("at_threshold", dict(ttft_ms=10000.0), Outcome.PASS, "ok", "ttft_ms (10000) <= 10000"),
    (
        "late_text",
        dict(ttft_ms=12400.0, keepalive_count=5),
        Outcome.FAIL,
        "ttft_exceeded",
        "ttft_ms (12400) > 10000; keepalives (5)",
    ),
    (
        "keepalives_then_timeout_after_200",
        dict(
            ttft_ms=None,
            total_ms=30000.0,
            keepalive_count=12,
            error_class=ErrorClass.TIMEOUT,
            finish_reason=None,
        ),
        Outcome.FAIL,
        "ttft_exceeded",
        "ttft_ms (none after 30000) > 10000; keepalives (12)",
    ),
    (
        "stall_then_cut_after_threshold",
        dict(ttft_ms=None, total_ms=11000.0, error_class=ErrorClass.STREAM_CUT, finish_reason=None),
        Outcome.FAIL,
        "ttft_exceeded",
        "ttft_ms (none after 11000) > 10000",
    ),
    (
        "late_text_then_midstream_429",
        dict(ttft_ms=15000.0, error_class=ErrorClass.MIDSTREAM_ERROR, error_code=429, finish_reason="error"),
        Outcome.FAIL,
        "ttft_exceeded",
        "ttft_ms (15000) > 10000",
    ),
    (
        "cut_before_threshold_no_text",
        dict(ttft_ms=None, total_ms=2000.0, error_class=ErrorClass.STREAM_CUT, finish_reason=None),
        Outcome.TRANSPORT,
        "stream_cut",
        "stream cut",
    ),
    (
        "connect_error",
        dict(
            http_status=None, ttft_ms=None, total_ms=None, error_class=ErrorClass.CONNECT, finish_reason=None
        ),
        Outcome.TRANSPORT,
        "connect",
        "error (connect)",
    ),
    (
        "timeout_before_response",
        dict(
            http_status=None,
            ttft_ms=None,
            total_ms=10000.0,
            error_class=ErrorClass.TIMEOUT,
            finish_reason=None,
        ),
        Outcome.TRANSPORT,
        "timeout",
        "before any response",
    ),
    (
        "http_429",
        dict(
            http_status=429,
            ttft_ms=None,
            error_class=ErrorClass.HTTP_STATUS,
            error_code=429,
            finish_reason=None,
        ),
        Outcome.TRANSPORT,
        "http_429",
        "http_status (429)",
    ),
    (
        "http_503",
        dict(
            http_status=503,
            ttft_ms=None,
            error_class=ErrorClass.HTTP_STATUS,
            error_code=503,
            finish_reason=None,
        ),
        Outcome.TRANSPORT,
        "http_503",
        "http_status (503)",
    ),
    (
        "http_529",
        dict(
            http_status=529,
            ttft_ms=None,
            error_class=ErrorClass.HTTP_STATUS,
            error_code=529,
            finish_reason=None,
        ),
        Outcome.TRANSPORT,
        "http_529",
        "http_status (529)",
    ),
    (
        "http_408",
        dict(
            http_status=408,
            ttft_ms=None,
            error_class=ErrorClass.HTTP_STATUS,
            error_code=408,
            finish_reason=None,
        ),
        Outcome.TRANSPORT,
        "http_408",
        "http_status (408)",
    ),
    (
        "http_400_not_transport",
        dict(
            http_status=400,
            ttft_ms=None,
            error_class=ErrorClass.HTTP_STATUS,
            error_code=400,
            finish_reason=None,
        ),
        Outcome.INCONCLUSIVE,
        "http_400",
        "http_status (400)",
    ),
    (
        "completed_without_text",
        dict(ttft_ms=None, total_ms=900.0, text=""),
        Outcome.INCONCLUSIVE,
        "no_text",
        "ttft_ms (none)",
    ),
    (
        "text_then_cut_still_measured",
        dict(ttft_ms=700.0, error_class=ErrorClass.STREAM_CUT, finish_reason=None),
        Outcome.PASS,
        "ok",
        "ttft_ms (700) <= 10000",
    ),
]


@pytest.mark.parametrize(
    ("kw", "outcome", "reason", "evidence"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_ttft_golden(kw: dict[str, object], outcome: Outcome, reason: str, evidence: str) -> None:
    j = ttft.judge([attempt(Contract.TTFT, **kw)], CFG)
    assert (j.outcome, j.reason) == (outcome, reason)
    assert evidence in j.evidence
    assert "\n" not in j.evidence


def test_threshold_comes_from_config() -> None:
    a = attempt(Contract.TTFT, ttft_ms=1500.0)
    assert ttft.judge([a], CanaryConfig(ttft_s=1.0)).outcome is Outcome.FAIL
    assert ttft.judge([a], CanaryConfig(ttft_s=2.0)).outcome is Outcome.PASS


def test_transport_retry_does_not_hide_a_failure() -> None:
    cut = attempt(
        Contract.TTFT, ttft_ms=None, total_ms=500.0, error_class=ErrorClass.CONNECT, http_status=None
    )
    late = attempt(Contract.TTFT, attempt_no=2, ttft_ms=11000.0)
    assert ttft.judge([late, cut], CFG).reason == "ttft_exceeded"
    ok = attempt(Contract.TTFT, attempt_no=2, ttft_ms=300.0)
    assert ttft.judge([cut, ok], CFG).outcome is Outcome.PASS
