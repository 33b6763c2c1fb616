"""What the probe's wire rules say about each kind of broken exchange (tasks/core/classify.py): the outcome,
the machine reason and the evidence line an operator reads in Slack, `canary explain` and the outcomes table.

One row per case, the whole `Judgement` compared: an evidence line that loses its number, its provider words or
its `: detail` tail is a wrong line, and a case judged by the wrong branch shows in its reason."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tasks.core.classify import exchange_judgement, protocol_judgement, upstream_failure, upstream_judgement
from tasks.core.types import Attempt, ErrorClass, Judgement, Outcome, ToolCall, Usage

pytestmark = pytest.mark.unit

T, F, INC = Outcome.TRANSPORT, Outcome.FAIL, Outcome.INCONCLUSIVE


def attempt(**kw: object) -> Attempt:
    return Attempt(round_id="r", model="m/x", tag="t", provider_name="T", contract="ttft", attempt_no=1,
                   started_at=datetime(2026, 1, 1, tzinfo=UTC), **kw)  # type: ignore[arg-type]


CASES: list[tuple[str, dict[str, object], Judgement | None]] = [
    ("connect with the error's words", dict(error_class=ErrorClass.CONNECT, error_detail="ConnectError refused"),
     Judgement(T, "connect", "error (connect) ConnectError refused")),
    ("connect without words", dict(error_class=ErrorClass.CONNECT), Judgement(T, "connect", "error (connect)")),
    ("a stream cut counts chunks and characters",
     dict(error_class=ErrorClass.STREAM_CUT, http_status=200, chunk_count=3, text="abcd"),
     Judgement(T, "stream_cut", "stream cut after chunks (3), text_chars (4)")),
    ("a bad frame with its detail", dict(error_class=ErrorClass.BAD_FRAME, chunk_count=2, error_detail="not JSON"),
     Judgement(T, "bad_frame", "broken exchange after chunks (2): not JSON")),
    ("a bad frame without detail", dict(error_class=ErrorClass.BAD_FRAME, chunk_count=2),
     Judgement(T, "bad_frame", "broken exchange after chunks (2)")),
    ("a mid-stream 502 is transport, its HTTP prefix dropped",
     dict(error_class=ErrorClass.MIDSTREAM_ERROR, http_status=200, error_code=502,
          error_detail="  HTTP 502 Bad Gateway: upstream down "),
     Judgement(T, "midstream_502", "midstream error.code (502): upstream down")),
    ("a mid-stream 400 is inconclusive, its words kept",
     dict(error_class=ErrorClass.MIDSTREAM_ERROR, http_status=200, error_code=400, error_detail="bad input"),
     Judgement(INC, "midstream_error", "midstream error.code (400): bad input")),
    ("a mid-stream error without words", dict(error_class=ErrorClass.MIDSTREAM_ERROR, http_status=200),
     Judgement(INC, "midstream_error", "midstream error.code (None)")),
    ("an HTTP prefix with nothing after it adds nothing",
     dict(error_class=ErrorClass.HTTP_STATUS, error_code=503, error_detail="HTTP 503"),
     Judgement(T, "http_503", "http_status (503)")),
    ("an HTTP 503 error keeps the provider's words",
     dict(error_class=ErrorClass.HTTP_STATUS, error_code=503, error_detail="HTTP 503 Service Unavailable: busy"),
     Judgement(T, "http_503", "http_status (503): busy")),
    ("an HTTP 401 is not transport", dict(error_class=ErrorClass.HTTP_STATUS, error_code=401, error_detail="no key"),
     Judgement(INC, "http_401", "http_status (401) not a transport code: no key")),
    ("an HTTP error class without a code reads the response's status",
     dict(error_class=ErrorClass.HTTP_STATUS, http_status=429),
     Judgement(T, "http_429", "http_status (429)")),
    ("a non-200 status without an error class is still an HTTP error", dict(http_status=503),
     Judgement(T, "http_503", "http_status (503)")),
    ("no response at all", dict(), Judgement(T, "no_response", "http_status (none)")),
    ("finish_reason error with a transport code, no error class",
     dict(http_status=200, finish_reason="error", error_code=502),
     Judgement(T, "midstream_502", "finish_reason (error) 502")),
    ("finish_reason error with another code", dict(http_status=200, finish_reason="error", error_code=400),
     Judgement(INC, "provider_error", "finish_reason (error) code (400)")),
    ("a model's own failure with finish_reason error",
     dict(http_status=200, finish_reason="error", native_finish_reason="MALFORMED_FUNCTION_CALL"),
     Judgement(INC, "provider_error", "finish_reason (error) code (None)")),
    ("a complete 200", dict(http_status=200, finish_reason="stop", text="hi"), None),
    ("a redirect names its Location", dict(error_class=ErrorClass.HTTP_STATUS, error_code=302,
                                           error_detail="HTTP 302 Found: Location: https://elsewhere.example/"),
     Judgement(F, "protocol_violation",
               "http_status (302) redirect on a pinned API call, not followed: Location: https://elsewhere.example/")),
    ("a redirect without a Location says so", dict(error_class=ErrorClass.HTTP_STATUS, error_code=307),
     Judgement(F, "protocol_violation", "http_status (307) redirect on a pinned API call, not followed: no Location")),
    ("a 3xx response status without an error code",
     dict(error_class=ErrorClass.HTTP_STATUS, http_status=301, error_detail="HTTP 301"),
     Judgement(F, "protocol_violation", "http_status (301) redirect on a pinned API call, not followed: no Location")),
    ("a protocol violation says what was seen", dict(error_class=ErrorClass.PROTOCOL, http_status=200,
                                                     error_detail="content-type (text/html), first bytes (<html>)"),
     Judgement(F, "protocol_violation", "content-type (text/html), first bytes (<html>)")),
    ("a protocol violation without detail", dict(error_class=ErrorClass.PROTOCOL, http_status=200),
     Judgement(F, "protocol_violation", "protocol violation")),
    ("an upstream failure masked as a stop, with everything the reply had",
     dict(http_status=200, finish_reason="stop", native_finish_reason="network_error", text="ab",
          tool_calls=(ToolCall(index=0, name="f"),), served_provider="Stealth", usage=Usage(completion_tokens=5)),
     Judgement(F, "upstream_error", "native_finish_reason (network_error), finish_reason (stop), text_chars (2), "
               "tool_calls (1), provider (Stealth)")),
    ("a bare finish_reason error is the upstream's failure", dict(http_status=200, finish_reason="error"),
     Judgement(F, "upstream_error", "native_finish_reason (none), finish_reason (error), text_chars (0), no usage")),
    ("usage with a cost only is usage", dict(http_status=200, native_finish_reason="timeout", usage=Usage(cost=0.1)),
     Judgement(F, "upstream_error", "native_finish_reason (timeout), finish_reason (none), text_chars (0)")),
]


@pytest.mark.parametrize(("kw", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_broken_exchange_gets_its_outcome_reason_and_evidence(kw: dict[str, object],
                                                                   expected: Judgement | None) -> None:
    assert exchange_judgement(attempt(**kw)) == expected


def test_only_a_redirect_or_a_protocol_fault_is_a_protocol_judgement() -> None:
    assert protocol_judgement(attempt(error_class=ErrorClass.HTTP_STATUS, error_code=503)) is None
    assert protocol_judgement(attempt(error_class=ErrorClass.HTTP_STATUS, http_status=200)) is None
    assert protocol_judgement(attempt(error_class=ErrorClass.TIMEOUT, http_status=302)) is None


@pytest.mark.parametrize("kw", [
    dict(error_class=ErrorClass.STREAM_CUT, http_status=200, native_finish_reason="network_error"),
    dict(error_class=ErrorClass.TIMEOUT, http_status=200, finish_reason="stop", native_finish_reason="timeout"),
    dict(http_status=502, finish_reason="stop", native_finish_reason="network_error"),
    dict(http_status=200, finish_reason="length", native_finish_reason="network_error"),
], ids=["cut", "timeout", "http-502", "length"])
def test_an_exchange_with_its_own_fault_or_its_own_end_is_no_masked_upstream_failure(kw: dict[str, object]) -> None:
    assert upstream_failure(attempt(**kw)) is None
    assert upstream_judgement(attempt(**kw)) is None
