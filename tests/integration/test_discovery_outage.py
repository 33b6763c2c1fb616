"""A discovery outage is not a config error (issue 44): a listing that times out or answers 408/429/5xx is an
`outage` (the upstream's trouble, for now), so `canary run`'s pre-flight lets the round run and record it; a
refused connection or an answer that is not a listing stays what the operator must fix (exit 2).

The listing is a loopback HTTP server that answers one status, or sleeps past the client's timeout."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from provider_canary.cli.runs import preflight
from tasks.config import CanaryConfig
from tasks.errors import ConfigError
from tasks.probe.discover import DiscoveryUnreachable, fetch_endpoints

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MODEL = "meta-llama/llama-3.3-70b-instruct"
ERROR_500 = b'{"error":{"message":"Internal Server Error","code":500}}'  # OpenRouter's shape (openrouter-api.md)
EMPTY = b'{"data":{"id":"meta-llama/llama-3.3-70b-instruct","endpoints":[]}}'


@contextmanager
def listing(status: int, body: bytes = ERROR_500, delay_s: float = 0.0) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            time.sleep(delay_s)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client timed out and left
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("status", "body", "outage"),
    [(500, ERROR_500, True), (503, b"", True), (529, b"", True), (429, b"", True), (408, b"", True),
     (400, b"", False), (418, b"", False), (200, b"<html>maintenance</html>", False)],
)
def test_a_try_again_status_is_an_outage(status: int, body: bytes, outage: bool) -> None:
    with listing(status, body) as base, httpx.Client() as client, pytest.raises(DiscoveryUnreachable) as info:
        fetch_endpoints(client, base, None, MODEL)
    assert (info.value.outage, info.value.status) == (outage, status if status != 200 else None)


def test_a_timeout_is_an_outage_a_refused_connection_is_not() -> None:
    with listing(200, EMPTY, delay_s=2.0) as base, httpx.Client() as client:
        with pytest.raises(DiscoveryUnreachable) as slow:
            fetch_endpoints(client, base, None, MODEL, timeout_s=0.3)
    assert slow.value.outage and str(slow.value) == f"discovery: cannot reach {base} (ReadTimeout)"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/api/v1"
    with httpx.Client() as client, pytest.raises(DiscoveryUnreachable) as refused:
        fetch_endpoints(client, closed, None, MODEL, timeout_s=2.0)
    assert not refused.value.outage


def test_the_preflight_lets_an_outage_through_and_stops_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-preflight")
    with listing(500) as base:
        assert preflight(CanaryConfig(base_url=base, models=(MODEL,)), [MODEL]) == {
            MODEL: f"discovery: {base} answered HTTP 500 for {MODEL}"}
    cfg = CanaryConfig(base_url="http://x", models=(MODEL,), read_timeout_s=0.3, connect_timeout_s=0.3)
    with listing(200, EMPTY, delay_s=2.0) as base:
        assert preflight(_at(cfg, base), [MODEL]) == {MODEL: f"discovery: cannot reach {base} (ReadTimeout)"}
    with listing(200, EMPTY) as base, pytest.raises(ConfigError, match="has no endpoints"):
        preflight(_at(cfg, base), [MODEL])
    with listing(404, b"") as base, pytest.raises(ConfigError, match="unknown model"):
        preflight(_at(cfg, base), [MODEL])


def _at(cfg: CanaryConfig, base: str) -> CanaryConfig:
    return replace(cfg, base_url=base)
