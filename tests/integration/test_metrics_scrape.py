"""A scrape as Prometheus makes it (tasks/metrics/exporter.py, tasks/core/exposition.py): hostile model ids and endpoint
tags still parse (prometheus_client's parser and Debian's `promtool check metrics`), gzip when the scraper
asks for it, and a scraper that hangs up mid-response costs the exporter no traceback.

Real DuckDB files under tmp, the real exporter on a loopback port (`canary metrics`, the console script, where
its stderr matters), httpx and raw sockets as the scrapers."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.settle import Prior, Settlement, settle_round
from tasks.core.types import Attempt, Contract, Endpoint, EndpointState, Mode, Usage
from tasks.metrics.exporter import CanaryCollector, exposition
from tasks.metrics.server import accepts_gzip, serve_metrics
from tasks.store.settlement import save_settlement
from tests.support import NO_EXCLUSIONS
from tests.support.prometheus import free_port, require_binary

pytestmark = pytest.mark.integration
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
CFG = CanaryConfig(ttft_s=1, min_hosts=1, exclusions_file=NO_EXCLUSIONS)
CANARY = str(Path(sys.executable).with_name("canary"))
HOSTILE_MODEL = 'acme/"quoted"\\back\nslash'
HOSTILE_TAGS = ('say "hi"', "back\\slash\\", "new\nline", "x" * 10_000)


def _settlement(model: str, tags: tuple[str, ...]) -> Settlement:
    round_id = f"{model}@{T0.isoformat()}"
    endpoints = [Endpoint(model, t, f"P{i}") for i, t in enumerate(tags)]
    attempts = [Attempt(round_id=round_id, model=model, tag=t, provider_name=f"P{i}", contract=Contract.TTFT,
                        attempt_no=1, started_at=T0, http_status=200, ttft_ms=3000.0 if i == 0 else 120.0,
                        total_ms=3500.0, chunk_count=5, finish_reason="stop", served_provider=f"P{i}",
                        text="Hello there, traveller.", usage=Usage(cost=0.001)) for i, t in enumerate(tags)]
    prior = Prior(model, Mode.ENFORCE, states={t: EndpointState(model, t, Mode.ENFORCE, fail_streak=1) for t in tags})
    return settle_round(prior, attempts, endpoints, CFG, T0, round_id=round_id)


def _db(path: Path, model: str, tags: tuple[str, ...]) -> Path:
    with store.open_store(path, snapshot=True) as con:
        save_settlement(con, _settlement(model, tags), landed_at=T0)
    with store.open_store(path, snapshot=True):
        pass
    return path


def test_hostile_names_stay_one_sample_each_for_prometheus_client_and_promtool(tmp_path: Path) -> None:
    db = _db(tmp_path / "canary.duckdb", HOSTILE_MODEL, HOSTILE_TAGS)
    text = exposition(CanaryCollector([db], CanaryConfig(**{**CFG.__dict__, "models": [HOSTILE_MODEL]}))).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    tags = {s.labels["provider_tag"] for s in families["canary_probe_success"].samples}
    assert tags == set(HOSTILE_TAGS)  # every value came back exactly: one escaper, applied once
    assert {s.labels["model"] for s in families["canary_model_configured"].samples} == {HOSTILE_MODEL}
    excluded = {s.labels["provider_tag"] for s in families["canary_endpoint_excluded"].samples if s.value == 1}
    assert excluded == {HOSTILE_TAGS[0]}  # the slow one, suspended
    ttfc = families["gen_ai_client_operation_time_to_first_chunk_seconds"].samples
    assert {s.labels["gen_ai_request_model"] for s in ttfc} == {HOSTILE_MODEL}
    promtool = require_binary("promtool")
    out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(), out.stdout + out.stderr


@pytest.mark.parametrize(("header", "gzip"), [
    ("gzip", True), ("gzip, deflate", True), ("deflate, gzip;q=0.5", True), ("*", True),
    ("identity", False), ("gzip;q=0", False), ("", False), (None, False), ("br", False),
], ids=lambda v: repr(v))
def test_accept_encoding_is_read_as_http_says(header: str | None, gzip: bool) -> None:
    assert accepts_gzip(header) is gzip


def test_gzip_when_the_scraper_asks_the_same_text_smaller(tmp_path: Path) -> None:
    db = _db(tmp_path / "canary.duckdb", "acme/m", tuple(f"ep-{i}" for i in range(30)))
    port = free_port()
    server = serve_metrics([db], CFG, port)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        plain = httpx.get(url, headers={"Accept-Encoding": "identity"}, timeout=10)
        packed = httpx.get(url, headers={"Accept-Encoding": "gzip"}, timeout=10)  # httpx decodes it
        again = httpx.get(url, headers={"Accept-Encoding": "gzip"}, timeout=10)
    finally:
        server.shutdown()
        server.server_close()
    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == "gzip" and packed.headers["vary"] == "Accept-Encoding"
    assert packed.text == plain.text == again.text  # one gzip stream: the kept part and this scrape's tail
    assert int(packed.headers["content-length"]) * 5 < len(plain.content)
    assert packed.headers["content-type"] == plain.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"


def test_a_scraper_that_hangs_up_mid_response_costs_no_traceback(tmp_path: Path) -> None:
    """~9 MB of exposition (30 endpoints with 10 kB tags), a scraper that reads 1 kB and resets the
    connection: the exporter says nothing on stderr and serves the next scrape."""
    tags = tuple(f"{i:02d}" + "y" * 10_000 for i in range(30))
    db = _db(tmp_path / "canary.duckdb", "acme/big", tags)
    port = free_port()
    proc = subprocess.Popen([CANARY, "metrics", "--db", str(db), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        for encoding in ("identity", "gzip", "identity"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: {encoding}\r\n\r\n".encode())
                assert s.recv(1024).startswith(b"HTTP/1.0 200")
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        time.sleep(1.0)
        whole = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30)
        assert whole.status_code == 200 and len(whole.content) > 5_000_000
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "Error" not in err, err[-3000:]
