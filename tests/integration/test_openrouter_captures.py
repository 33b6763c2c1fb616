"""Real OpenRouter captures (tests/fixtures/openrouter/index.json, each with its source) through the probe and
every judge.

A plain loopback HTTP double serves each capture's status, content-type and exact body bytes, split into HTTP
chunks at points Hypothesis picks (so a frame, a UTF-8 character or a JSON body can be cut anywhere on the
wire); `probe_once` (real httpx) records the attempt, and every contract judge must reach the outcome a careful
reader gives the capture: one exchange-level judgement for upstream failures and relayed errors, each judge's
own verdict for a completed exchange.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.config import CanaryConfig
from tasks.core.contracts import probed, spec_of, tools
from tasks.core.types import Attempt, Contract, Endpoint, Judgement
from tasks.probe.attempt import probe_once
from tasks.runtime.clock import SystemClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FIXTURES = Path(__file__).parents[1] / "fixtures" / "openrouter"
INDEX = json.loads((FIXTURES / "index.json").read_text(encoding="utf-8"))
CAPTURES = {c["name"]: c for c in INDEX["captures"]}
API_KEY = "sk-or-v1-0123456789abcdef0123456789abcdef"
CFG = CanaryConfig(ttft_s=5.0, connect_timeout_s=2.0, read_timeout_s=5.0, probe_budget_s=10.0)


@dataclass
class Served:
    status: int = 200
    content_type: str = "text/event-stream"
    pieces: list[bytes] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)


class _Double(BaseHTTPRequestHandler):
    """Answers every POST with the current `Served`: its status, content-type, and each piece as one HTTP chunk."""

    served: Served = Served()
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s = self.served
        self.send_response(s.status)
        self.send_header("Content-Type", s.content_type)
        for name, value in s.headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for piece in s.pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            time.sleep(0.0005)  # separate reads on the client: the split points reach the parser
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def double() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Double)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    server.shutdown()
    server.server_close()


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % len(body) for c in cuts} - {0})
    edges = [0, *points, len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def probe(base_url: str, capture: dict[str, Any], contract: Contract, pieces: list[bytes]) -> Attempt:
    _Double.served = Served(capture["status"], capture["content_type"], pieces)
    endpoint = Endpoint(model="m/x", tag="captured", provider_name=capture["provider"] or "Captured")
    with httpx.Client() as client:
        return probe_once(
            client, base_url=base_url, api_key=API_KEY, endpoint=endpoint, contract=contract,
            round_id="r-capture", attempt_no=1, language="en", cfg=CFG, clock=SystemClock(),
        )


def judge(capture: dict[str, Any], contract: Contract, a: Attempt) -> Judgement:
    spec = capture.get("tools")
    if contract is Contract.TOOLS and spec:
        return tools.judge([a], CFG, schemas=spec["schemas"], expected=spec["expected"])
    return spec_of(contract).judge([a], CFG)


def check_attempt(capture: dict[str, Any], a: Attempt) -> None:
    want = capture["attempt"]
    if "text" in want:
        assert a.text == want["text"]
    if "reasoning_startswith" in want:
        assert a.reasoning.startswith(want["reasoning_startswith"])
    for key in ("keepalive_count", "finish_reason", "native_finish_reason", "served_provider", "error_code"):
        if key in want:
            assert getattr(a, key) == want[key], key
    if "error_class" in want:
        assert (a.error_class and str(a.error_class)) == want["error_class"]
    if "cost" in want:
        assert a.usage.cost == want["cost"]
    if "completion_tokens" in want:
        assert a.usage.completion_tokens == want["completion_tokens"]
    if "tool_calls" in want:
        assert [[c.name, c.arguments] for c in a.tool_calls] == want["tool_calls"]
    if "detail_contains" in want:
        assert a.error_detail is not None and want["detail_contains"] in a.error_detail, a.error_detail
    assert API_KEY not in (a.error_detail or "") + a.text


def check_judges(capture: dict[str, Any], a: Attempt) -> None:
    for contract in probed():
        j = judge(capture, contract, a)
        exchange = capture["exchange"]
        if exchange is not None:
            assert (str(j.outcome), j.reason) == (exchange["outcome"], exchange["reason"]), (contract, j)
            assert exchange["evidence_contains"] in j.evidence, (contract, j.evidence)
        else:
            assert [str(j.outcome), j.reason] == capture["contracts"][str(contract)], (contract, j)
        assert j.reason not in {"empty_reply", "invalid_json", "no_call"} or exchange is None


def test_every_capture_names_its_source() -> None:
    for capture in INDEX["captures"]:
        source = capture["source"]
        assert (FIXTURES / capture["file"]).is_file(), capture["name"]
        assert source.get("url") or (source.get("repository") and source.get("path")) or source.get("found_by")
        assert capture["judged"] and capture["what"]
        assert capture["exchange"] is not None or set(capture["contracts"]) == {str(c) for c in probed()}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_capture_whole_through_every_contract(double: str, name: str) -> None:
    capture = CAPTURES[name]
    body = (FIXTURES / capture["file"]).read_bytes()
    for contract in probed():
        a = probe(double, capture, contract, [body])
        check_attempt(capture, a)
        j = judge(capture, contract, a)
        exchange = capture["exchange"]
        expected = [exchange["outcome"], exchange["reason"]] if exchange else capture["contracts"][str(contract)]
        assert [str(j.outcome), j.reason] == expected, (contract, j)


@pytest.mark.parametrize("name", sorted(CAPTURES))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=1, max_value=1 << 20), max_size=16))
def test_capture_split_at_random_points(double: str, name: str, cuts: list[int]) -> None:
    capture = CAPTURES[name]
    body = (FIXTURES / capture["file"]).read_bytes()
    a = probe(double, capture, Contract.REFUSAL, split(body, cuts))
    check_attempt(capture, a)
    check_judges(capture, a)


def test_a_pinned_endpoint_answering_302_is_a_protocol_violation_with_its_location(double: str) -> None:
    """Issue 21 item 9: a 302 for ever was `inconclusive` for ever and never alerted. The probe never follows
    it (the request carries the key); every contract says `protocol_violation` with the Location, redacted."""
    location = f"https://login.example.test/?next=/api&key={API_KEY}"
    for contract in probed():
        _Double.served = Served(302, "text/html", [b"<a href='/login'>Found</a>"], {"Location": location})
        endpoint = Endpoint(model="m/x", tag="captured", provider_name="Captured")
        with httpx.Client() as client:
            a = probe_once(client, base_url=double, api_key=API_KEY, endpoint=endpoint, contract=contract,
                           round_id="r-302", attempt_no=1, language="en", cfg=CFG, clock=SystemClock())
        assert (a.http_status, a.error_code) == (302, 302)
        assert a.error_detail is not None
        assert "redirect to 'https://login.example.test/?next=/api&key=" in a.error_detail
        assert API_KEY not in a.error_detail
        j = spec_of(contract).judge([a], CFG)
        assert (str(j.outcome), j.reason) == ("fail", "protocol_violation"), (contract, j)
        assert "redirect on a pinned API call, not followed" in j.evidence and API_KEY not in j.evidence


def test_a_relayed_cause_that_echoes_the_key_is_kept_redacted(double: str) -> None:
    raw = f'{{"error":{{"message":"invalid api key {API_KEY} (Authorization: Bearer {API_KEY})"}}}}'
    body = json.dumps({"error": {"message": "Provider returned error", "code": 401,
                                 "metadata": {"raw": raw, "provider_name": "Echo"}}}).encode()
    _Double.served = Served(401, "application/json", [body])
    endpoint = Endpoint(model="m/x", tag="captured", provider_name="Echo")
    with httpx.Client() as client:
        a = probe_once(client, base_url=double, api_key=API_KEY, endpoint=endpoint, contract=Contract.REFUSAL,
                       round_id="r-echo", attempt_no=1, language="en", cfg=CFG, clock=SystemClock())
    j = spec_of(Contract.REFUSAL).judge([a], CFG)
    assert a.error_detail is not None and "Provider returned error [Echo]: invalid api key" in a.error_detail
    assert API_KEY not in a.error_detail and API_KEY[:20] not in j.evidence
    assert (str(j.outcome), j.reason) == ("inconclusive", "http_401")
