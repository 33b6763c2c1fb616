"""Both probe shells against a loopback server that plays exact bytes (stalls, cuts, garbage, huge replies):
every case runs on `probe_once_async` (the probe worker's event loop) and on `probe_once` (a thread's client).

Each test scripts the server's answer as a list of steps: bytes to send, a float to sleep, HANG (keep the
socket open and silent), RST (abort the connection). Budgets are small: a 1 s threshold vs a 1.5 s delay.
"""

from __future__ import annotations

import asyncio
import json
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import pytest

from tasks.clock import SystemClock
from tasks.config import CanaryConfig
from tasks.core.classify import is_transport
from tasks.core.contracts import spec_of, ttft
from tasks.core.types import Attempt, Contract, Endpoint, ErrorClass, Outcome, Reason
from tasks.probe import probe_once, probe_once_async
from tasks.probe_stream import new_async_client
from tests.support.http_read import read_request

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]

API_KEY = "sk-or-v1-0123456789abcdef0123456789abcdef"
ENDPOINT = Endpoint(model="meta-llama/llama-3.3-70b-instruct", tag="deepinfra/fp8", provider_name="DeepInfra")
CFG = CanaryConfig(
    ttft_s=1.0, connect_timeout_s=2.0, read_timeout_s=3.0, probe_budget_s=5.0, text_cap_bytes=4096
)
HANG = "hang"
RST = "rst"
Step = bytes | float | str

SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Connection: close\r\n\r\n"
)
KEEPALIVE = b": OPENROUTER PROCESSING\n\n"
DONE = b"data: [DONE]\n\n"


def chunk(
    content: str | None = None, *, provider: str = "DeepInfra", finish: str | None = None, **extra: Any
) -> bytes:
    delta: dict[str, Any] = {"role": "assistant"}
    if content is not None:
        delta["content"] = content
    delta.update(extra.pop("delta", {}))
    body = {
        "id": "gen-1778031306-UD7bR0I1JNCsPvVzlXat",
        "object": "chat.completion.chunk",
        "created": 1778031306,
        "model": ENDPOINT.model,
        "provider": provider,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish}],
        **extra,
    }
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


def http_response(
    status: int, body: bytes, *, content_type: str = "application/json", **headers: str
) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    head += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


@dataclass
class Wire:
    base_url: str
    requests: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)


@contextmanager
def wire_server(steps: list[Step]) -> Iterator[Wire]:
    stop = threading.Event()
    wire = Wire(base_url="")

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            request = read_request(sock)
            if request is None:
                return
            headers, body, _ = request
            wire.requests.append((headers, json.loads(body) if body else {}))
            for step in steps:
                if isinstance(step, bytes):
                    try:
                        sock.sendall(step)
                    except OSError:
                        return
                elif isinstance(step, float):
                    if stop.wait(step):
                        return
                elif step == HANG:
                    stop.wait(30)
                    return
                elif step == RST:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()
                    return

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    wire.base_url = f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    try:
        yield wire
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


_SHELL = ["loop"]


@pytest.fixture(autouse=True, params=["loop", "thread"])
def shell(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which shell `run` probes with: the event loop's (the probe worker's) or a thread's."""
    _SHELL[0] = request.param
    yield request.param
    _SHELL[0] = "loop"


def run(
    steps: list[Step],
    cfg: CanaryConfig = CFG,
    contract: Contract = Contract.TTFT,
    language: str | None = None,
) -> tuple[Attempt, Wire, float]:
    with wire_server(steps) as wire:
        kwargs: dict[str, Any] = dict(base_url=wire.base_url, api_key=API_KEY, endpoint=ENDPOINT, contract=contract,
                                      round_id="r1", attempt_no=1, language=language, cfg=cfg, clock=SystemClock())
        t0 = time.monotonic()
        if _SHELL[0] == "thread":
            with httpx.Client() as client:
                attempt = probe_once(client, **kwargs)
        else:
            async def on_a_loop() -> Attempt:
                async with new_async_client() as client:  # the probe worker's (tasks/probe_stream.py)
                    return await probe_once_async(client, **kwargs)

            attempt = asyncio.run(on_a_loop())
        return attempt, wire, time.monotonic() - t0


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


def protocol_violation(attempt: Attempt) -> str:
    """The attempt is a protocol violation, never transport, and every probed contract fails it."""
    assert attempt.error_class is ErrorClass.PROTOCOL and attempt.http_status == 200, attempt.error_detail
    assert not is_transport(attempt)
    for contract in (Contract.TTFT, Contract.REFUSAL, Contract.STRUCTURED, Contract.LANGUAGE):
        judged = spec_of(contract).judge([replace(attempt, contract=contract)], CFG)
        assert (judged.outcome, judged.reason) == (Outcome.FAIL, Reason.PROTOCOL_VIOLATION), contract
    detail = attempt.error_detail or ""
    assert "\n" not in detail and API_KEY not in detail
    return detail


def test_a_frame_that_is_not_json_is_a_protocol_violation_and_reading_stops() -> None:
    attempt, _, _ = run(
        [SSE_HEAD, chunk("Hello"), b"data: {not json\n\n", chunk(" there", finish="stop"), DONE]
    )
    detail = protocol_violation(attempt)
    assert "data: frame is not JSON: '{not json' (9 bytes); after chunks (1)" in detail
    assert attempt.text == "Hello" and attempt.finish_reason is None


def test_invalid_utf8_never_raises_and_shows_as_replacement_characters() -> None:
    frame = chunk("caf\u00e9 au lait").replace("é".encode(), b"\xc3")
    attempt, _, _ = run([SSE_HEAD, frame, chunk("", finish="stop"), DONE])
    assert attempt.text == "caf\ufffd au lait"
    assert "frame is not valid UTF-8" in protocol_violation(attempt)


@pytest.mark.parametrize(
    ("content_type", "says"),
    [
        ("text/html; charset=utf-8", "content-type (text/html; charset=utf-8) is not an event stream"),
        ("text/plain", "content-type (text/plain) is not an event stream"),
        ("application/json", "application/json body is not a JSON object (over the 81920-byte cap, stopped"),
    ],
)
def test_a_200_html_page_is_a_protocol_violation(content_type: str, says: str) -> None:
    page = b"<!DOCTYPE html>\n<html><title>Just a moment...</title><!-- " + API_KEY.encode() + b" -->"
    page += b"<p>wait</p>" * 10_000 + b"</html>"
    attempt, _, elapsed = run([http_response(200, page, content_type=content_type)])
    detail = protocol_violation(attempt)
    assert says in detail and "'<!DOCTYPE html>\\n<html><title>Just a moment...</title><!-- ***" in detail
    assert "bytes read, the rest not read" in detail
    assert elapsed < 3


def test_a_body_without_content_type_and_without_sse_is_a_protocol_violation() -> None:
    head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
    attempt, _, _ = run([head, b"<html>\n<body>Bad gateway</body>\n</html>\n"])
    assert "HTTP 200 body is not an event stream, first line '<html>' (6 bytes)" in protocol_violation(
        attempt
    )


def test_an_error_object_behind_a_wrong_content_type_is_still_read_as_an_error() -> None:
    body = b'{"error":{"message":"Provider returned error","code":502}}'
    attempt, _, _ = run([http_response(200, body, content_type="text/plain")])
    assert attempt.error_class is ErrorClass.MIDSTREAM_ERROR and attempt.error_code == 502
    assert is_transport(attempt)


def test_a_huge_line_is_given_up_at_the_cap_without_reading_the_rest() -> None:
    piece = b"x" * 65536
    steps: list[Step] = [SSE_HEAD, b'data: {"choices":[{"delta":{"content":"'] + [piece] * 320
    attempt, wire, elapsed = run(steps + [b'"}}]}\n\n', DONE])
    detail = protocol_violation(attempt)
    assert "line over the 1048576-byte cap: stopped reading" in detail
    assert """'data: {"choices":[{"delta":{"content":"xxx""" in detail
    read = int(detail.rsplit("bytes_read (", 1)[1].rstrip(")"))
    assert 1_048_576 < read < 2_000_000 < len(piece) * 320  # the other 19 MB were never read
    assert elapsed < 5


def test_a_cut_inside_a_line_stays_a_stream_cut() -> None:
    attempt, _, _ = run([SSE_HEAD, chunk("Half a"), b'data: {"choices":[{"delta":{"content":" rep'])
    assert attempt.error_class is ErrorClass.STREAM_CUT and is_transport(attempt)


def test_lone_surrogate_escape_is_stored_as_replacement_characters() -> None:
    attempt, _, _ = run([SSE_HEAD, b'data: {"choices":[{"delta":{"content":"a\\ud800b"}}]}\n\n', DONE])
    assert attempt.text.startswith("a") and attempt.text.endswith("b") and "\ufffd" in attempt.text
    attempt.text.encode("utf-8")


def test_a_one_megabyte_reply_is_capped_on_a_character_boundary() -> None:
    piece = "Ж" * 999 + "x"  # 1999 bytes per chunk; 'Ж' is 2 bytes, so a byte cap may land mid-character
    steps: list[Step] = [SSE_HEAD] + [chunk(piece)] * 520 + [chunk("", finish="stop"), DONE]
    cfg = replace(CFG, text_cap_bytes=4097)
    attempt, _, elapsed = run(steps, cfg)
    assert attempt.error_class is None and attempt.finish_reason == "stop"
    assert attempt.text_truncated
    raw = attempt.text.encode("utf-8")
    assert 4095 <= len(raw) <= 4097 and attempt.text.startswith("ЖЖ")
    assert attempt.chunk_count == 521
    assert elapsed < 10


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
