"""The router's `GET /metrics` as a gateway operator reads it (provider_canary/router/metrics.py): prometheus_client's
own ASGI app (gzip on request, OpenMetrics when asked), process metrics, requests in flight, the whole request's
duration and the upstream's token usage under OpenTelemetry GenAI names, per client requests and refusals; the older
series unchanged. Through the real router and the official `openai` client."""

from __future__ import annotations

import gzip
import hashlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from tests.integration.test_router_metrics import scrape, total
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

KEY = "sk-canary-metrics-test-key"
MESSAGES = [{"role": "user", "content": "Hello"}]
Families = dict[str, list[tuple[dict[str, str], float]]]  # what `scrape` reads: name -> (labels, value)


@dataclass(frozen=True)
class Scrapes:
    """What the router's `/metrics` said while the slow stream was in flight, after it, and in each format."""

    during: Families
    after: Families
    zipped: httpx.Response
    zipped_bytes: bytes
    open_metrics: httpx.Response


def test_the_gateway_series_and_the_exposition_formats(tmp_path: Path) -> None:
    scripts = {"t1": Script("ok", text="one two three", prompt_tokens=42),
               "t2": Script("slow_first", text="slow answer", delay_s=1.0)}
    raw = {"router": {"flush_interval_s": 0.05, "events_path": str(tmp_path / "e.jsonl"),
                      "savings_path": str(tmp_path / "s.jsonl"), "publish_dir": str(tmp_path / "published")},
           "client": [{"name": "team-a", "key_sha256": hashlib.sha256(KEY.encode()).hexdigest()}]}
    with FakeUpstream(scripts) as up:
        raw["route"] = [{"model": m, "tier": [{"base_url": up.base_url, "model": m}]} for m in ("t1", "t2")]
        with start_router(parse_routes(raw), env={}) as r:
            scrapes = _traffic(r, up)
    _check_in_flight_and_clients(scrapes)
    _check_genai_series(scrapes.after, up.port)
    _check_exposition_formats(scrapes)


def _traffic(r: RunningRouter, up: FakeUpstream) -> Scrapes:
    """t1 whole and streamed, a refused model, and t2's slow stream scraped while it is in flight."""
    oai = openai.OpenAI(base_url=r.base_url, api_key=KEY, max_retries=0, timeout=20)
    oai.chat.completions.create(model="t1", messages=MESSAGES)  # type: ignore[arg-type]
    chunks = list(oai.chat.completions.create(model="t1", messages=MESSAGES, stream=True))  # type: ignore[arg-type]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "one two three"
    with pytest.raises(openai.NotFoundError):  # no route: a refusal, per client
        oai.chat.completions.create(model="absent", messages=MESSAGES)  # type: ignore[arg-type]
    slow = threading.Thread(target=lambda: list(oai.chat.completions.create(
        model="t2", messages=MESSAGES, stream=True)))  # type: ignore[call-overload]
    slow.start()
    deadline = time.monotonic() + 10
    while not up.for_model("t2") and time.monotonic() < deadline:
        time.sleep(0.01)
    during = scrape(r)
    slow.join(10)
    after = scrape(r)
    metrics = r.base_url.removesuffix("/v1") + "/metrics"
    with httpx.stream("GET", metrics, headers={"accept-encoding": "gzip"}) as zipped:
        zipped_bytes = b"".join(zipped.iter_raw())
    open_metrics = httpx.get(metrics, headers={"accept": "application/openmetrics-text; version=1.0.0"})
    return Scrapes(during, after, zipped, zipped_bytes, open_metrics)


def _check_in_flight_and_clients(scrapes: Scrapes) -> None:
    in_flight = "canary_router_requests_in_flight"
    assert total(scrapes.during, in_flight) == 1
    assert total(scrapes.after, in_flight) == 0
    assert total(scrapes.after, "canary_router_client_requests_total", client="team-a") == 4
    assert total(scrapes.after, "canary_router_client_refusals_total", client="team-a", reason="no_route") == 1


def _check_genai_series(after: Families, port: int) -> None:
    """The whole request's duration and the upstream's usage under OpenTelemetry GenAI names."""
    genai = {"gen_ai_operation_name": "chat", "gen_ai_provider_name": "openrouter", "gen_ai_request_model": "t1",
             "route": "model:t1", "tier": "1", "server_address": "127.0.0.1", "server_port": str(port)}
    duration = "gen_ai_client_operation_duration_seconds"
    assert total(after, f"{duration}_count", **genai, error_type="") == 2
    assert total(after, f"{duration}_count", gen_ai_request_model="t2", error_type="") == 1
    assert total(after, f"{duration}_sum", gen_ai_request_model="t2") >= 1.0  # the whole stream, to its last byte
    usage = "gen_ai_client_token_usage"
    assert total(after, f"{usage}_sum", **genai, gen_ai_token_type="input") == 2 * 42
    assert total(after, f"{usage}_sum", **genai, gen_ai_token_type="output") == 2 * 3
    assert total(after, f"{usage}_count", **genai, gen_ai_token_type="output") == 2
    assert total(after, "process_cpu_seconds_total") > 0
    assert total(after, "process_resident_memory_bytes") > 0
    assert total(after, "canary_router_requests_total", outcome="served") == 3  # the series that were there before


def _check_exposition_formats(scrapes: Scrapes) -> None:
    """gzip on request, OpenMetrics when asked."""
    assert scrapes.zipped.status_code == 200
    assert scrapes.zipped.headers["content-encoding"] == "gzip"
    assert b"canary_router_requests_total" in gzip.decompress(scrapes.zipped_bytes)
    assert scrapes.open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    assert scrapes.open_metrics.text.endswith("# EOF\n")
    names = {f.name for f in openmetrics_families(scrapes.open_metrics.text)}
    assert {"canary_router_requests", "gen_ai_client_token_usage", "process_cpu_seconds"} <= names
