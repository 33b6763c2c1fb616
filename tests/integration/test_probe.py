"""Both probe shells against a loopback server that plays exact bytes (stalls, cuts, garbage, huge replies):
every case runs on `probe_once_async` (the probe worker's event loop) and on `probe_once` (a thread's client).

Replies that are not what was asked: test_probe_malformed.py. Each test scripts the server's answer
(tests/support/probe_wire.py) as a list of steps: bytes to send, a float to sleep, HANG (keep the
socket open and silent), RST (abort the connection). Budgets are small: a 1 s threshold vs a 1.5 s delay.
"""

from __future__ import annotations

import socket
from dataclasses import replace

import httpx
import pytest

from tasks.core.classify import is_transport
from tasks.core.contracts import ttft
from tasks.core.types import Contract, ErrorClass, Outcome, Reason
from tasks.probe.attempt import probe_once
from tasks.runtime.clock import SystemClock
from tests.support.probe_wire import (
    API_KEY,
    CFG,
    DONE,
    ENDPOINT,
    HANG,
    KEEPALIVE,
    RST,
    SSE_HEAD,
    Step,
    chunk,
    http_response,
    run,
    shell,  # noqa: F401 (autouse: every test on both shells)
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


def test_healthy_stream_records_every_field_and_sends_a_pinned_attributed_request() -> None:
    usage = {"prompt_tokens": 21, "completion_tokens": 3, "total_tokens": 24, "cost": 0.00000495}
    attempt, wire, _ = run(
        [
            SSE_HEAD,
            KEEPALIVE,
            chunk(None),
            0.3,
            chunk("*She smiles*"),
            chunk(" Welcome!"),
            chunk("", finish="stop"),
            chunk("", finish="stop", usage=usage),
            DONE,
        ]
    )
    assert attempt.error_class is None and attempt.error_detail is None
    assert attempt.http_status == 200
    assert attempt.text == "*She smiles* Welcome!"
    assert attempt.ttft_ms is not None and 300 <= attempt.ttft_ms < 2000  # the role-only chunk did not count
    assert attempt.total_ms is not None and attempt.total_ms >= attempt.ttft_ms
    assert (attempt.chunk_count, attempt.keepalive_count) == (5, 1)
    assert (attempt.finish_reason, attempt.native_finish_reason) == ("stop", "stop")
    assert attempt.served_provider == "DeepInfra" and not attempt.is_pin_mismatch
    assert (attempt.usage.prompt_tokens, attempt.usage.total_tokens, attempt.usage.cost) == (
        21,
        24,
        0.00000495,
    )
    assert (attempt.round_id, attempt.tag, attempt.contract, attempt.language) == (
        "r1",
        "deepinfra/fp8",
        "ttft",
        "en",
    )
    assert attempt.started_at.tzinfo is not None
    assert not is_transport(attempt)
    [(headers, body)] = wire.requests
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers["http-referer"] and headers["x-openrouter-title"]
    assert body["provider"] == {"only": ["deepinfra/fp8"], "allow_fallbacks": False}
    assert body["stream"] is True and body["model"] == ENDPOINT.model


def test_slow_first_token_with_keepalives_is_measured_past_the_threshold() -> None:
    steps: list[Step] = [SSE_HEAD] + [KEEPALIVE, 0.25] * 6 + [chunk("Late."), chunk("", finish="stop"), DONE]
    attempt, _, _ = run(steps)
    assert attempt.error_class is None
    assert attempt.ttft_ms is not None and attempt.ttft_ms >= 1500 > CFG.ttft_s * 1000
    assert attempt.keepalive_count == 6


def test_reasoning_delta_counts_as_first_token() -> None:
    attempt, _, _ = run(
        [SSE_HEAD, chunk("", delta={"reasoning": "Hmm."}), 0.4, chunk("Hi"), chunk("", finish="stop"), DONE]
    )
    assert attempt.reasoning == "Hmm." and attempt.text == "Hi"
    assert attempt.ttft_ms is not None and attempt.ttft_ms < 300


def test_stall_after_headers_is_a_timeout_with_status_200_and_no_text() -> None:
    attempt, _, elapsed = run([SSE_HEAD, HANG], replace(CFG, read_timeout_s=0.5))
    assert attempt.error_class is ErrorClass.TIMEOUT
    assert attempt.http_status == 200 and attempt.ttft_ms is None and attempt.text == ""
    assert 0.4 < elapsed < 2.5
    judged = ttft.judge_attempt(attempt, 0.4)  # a 200 without text in time is the ttft contract's failure
    assert (judged.outcome, judged.reason) == (Outcome.FAIL, Reason.TTFT_EXCEEDED)


def test_endless_keepalives_are_cut_by_the_wall_budget() -> None:
    attempt, _, elapsed = run([SSE_HEAD] + [KEEPALIVE, 0.1] * 200, replace(CFG, probe_budget_s=1.0))
    assert attempt.error_class is ErrorClass.TIMEOUT and "budget" in (attempt.error_detail or "")
    assert 0.9 < elapsed < 1.8
    assert attempt.keepalive_count >= 5 and attempt.ttft_ms is None


def test_silent_stall_mid_reply_ends_at_the_budget_not_the_read_timeout() -> None:
    cfg = replace(CFG, probe_budget_s=1.0, read_timeout_s=10.0)
    attempt, _, elapsed = run([SSE_HEAD, chunk("Once upon"), HANG], cfg)
    assert attempt.error_class is ErrorClass.TIMEOUT
    assert 0.9 < elapsed < 2.0
    assert attempt.text == "Once upon"
    assert is_transport(attempt)


def test_server_that_never_answers_is_a_timeout_before_any_response() -> None:
    attempt, _, elapsed = run([HANG], replace(CFG, read_timeout_s=0.5))
    assert attempt.error_class is ErrorClass.TIMEOUT and attempt.http_status is None
    assert elapsed < 2.5
    assert is_transport(attempt)


def test_connection_refused_is_connect() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with httpx.Client() as client:
        attempt = probe_once(
            client,
            base_url=f"http://127.0.0.1:{port}/api/v1",
            api_key=API_KEY,
            endpoint=ENDPOINT,
            contract=Contract.REFUSAL,
            round_id="r1",
            attempt_no=2,
            language=None,
            cfg=CFG,
            clock=SystemClock(),
        )
    assert attempt.error_class is ErrorClass.CONNECT and attempt.http_status is None
    assert attempt.attempt_no == 2 and is_transport(attempt)
    assert API_KEY not in (attempt.error_detail or "")


@pytest.mark.parametrize(
    "ending",
    [pytest.param([], id="eof"), pytest.param([RST], id="reset")],
)
def test_cut_stream_keeps_partial_text(ending: list[Step]) -> None:
    attempt, _, _ = run([SSE_HEAD, chunk("The ranger "), chunk("draws"), 0.1, *ending])
    assert attempt.error_class is ErrorClass.STREAM_CUT
    assert attempt.text == "The ranger draws" and attempt.finish_reason is None
    assert is_transport(attempt)


def test_cut_inside_a_chunked_body_is_a_stream_cut() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    payload = chunk("Half")
    attempt, _, _ = run([head, f"{len(payload):x}\r\n".encode() + payload + b"\r\n", b"40\r\ndata: {"])
    assert attempt.error_class is ErrorClass.STREAM_CUT and attempt.text == "Half"



@pytest.mark.parametrize(
    ("status", "body", "headers", "code", "detail", "retry", "transport"),
    [
        pytest.param(
            429,
            b'{"error":{"message":"Rate limit exceeded: upstream","code":429}}',
            {"Retry_After": "7"},
            429,
            "Rate limit exceeded: upstream",
            7.0,
            True,
            id="429-retry-after",
        ),
        pytest.param(
            503,
            b'{"error":{"message":"No provider available","code":503}}',
            {},
            503,
            "No provider available",
            None,
            True,
            id="503",
        ),
        pytest.param(529, b"overloaded\n", {}, 529, "overloaded", None, True, id="529-text-body"),
        pytest.param(408, b"", {}, 408, "HTTP 408", None, True, id="408-empty"),
        pytest.param(
            404,
            b'{"error":{"message":"No allowed providers are available for the selected model.","code":404}}',
            {},
            404,
            "No allowed providers",
            None,
            False,
            id="404-pin-impossible",
        ),
        pytest.param(
            400,
            b'{"error":{"message":"Invalid key sk-or-v1-0123456789abcdef0123456789abcdef"}}',
            {},
            400,
            "Invalid key ***",
            None,
            False,
            id="400-secret-redacted",
        ),
    ],
)
def test_non_200_records_status_code_detail_and_retry_after(
    status: int,
    body: bytes,
    headers: dict[str, str],
    code: int,
    detail: str,
    retry: float | None,
    transport: bool,
) -> None:
    attempt, _, _ = run([http_response(status, body, **headers)])
    assert attempt.error_class is ErrorClass.HTTP_STATUS
    assert attempt.http_status == status and attempt.error_code == code
    assert detail in (attempt.error_detail or "") and "\n" not in (attempt.error_detail or "")
    assert API_KEY not in (attempt.error_detail or "")
    assert attempt.retry_after_s == retry
    assert is_transport(attempt) is transport


@pytest.mark.parametrize(("code", "transport"), [(502, True), (429, True), (400, False)])
def test_midstream_error_chunk(code: int, transport: bool) -> None:
    error = {"code": code, "message": "Provider returned error", "metadata": {"error_type": "x"}}
    attempt, _, _ = run([SSE_HEAD, chunk("Two words"), chunk("", finish="error", error=error), DONE])
    assert attempt.error_class is ErrorClass.MIDSTREAM_ERROR and attempt.error_code == code
    assert attempt.error_detail == "Provider returned error"
    assert attempt.text == "Two words" and attempt.finish_reason == "error"
    assert is_transport(attempt) is transport


def test_error_inside_a_200_json_body() -> None:
    body = b'{"error":{"message":"Provider returned error","code":502}}'
    attempt, _, _ = run([http_response(200, body)])
    assert attempt.error_class is ErrorClass.MIDSTREAM_ERROR and attempt.error_code == 502
    assert is_transport(attempt)


def test_pin_not_honoured_records_the_provider_that_served() -> None:
    attempt, _, _ = run(
        [SSE_HEAD, chunk("Hi", provider="Together"), chunk("", provider="Together", finish="stop"), DONE]
    )
    assert attempt.served_provider == "Together" and attempt.is_pin_mismatch
    assert attempt.error_class is None


def test_language_attempt_records_its_language_and_sends_the_native_prompt() -> None:
    attempt, wire, _ = run(
        [SSE_HEAD, chunk("Olá!"), chunk("", finish="stop"), DONE], contract=Contract.LANGUAGE, language="pt"
    )
    assert attempt.language == "pt" and attempt.contract is Contract.LANGUAGE
    assert "português" in wire.requests[0][1]["messages"][0]["content"]
