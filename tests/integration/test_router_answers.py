"""Issue 29 through the real router, driven by the official `openai` client: nothing empty reaches a client while
another tier could answer (the real captures of OpenRouter's masked upstream failure, a plain empty stop, the
404 "No endpoints found that can handle the requested parameters"), and a non-streamed answer that fails its
tools or structured check is asked of the next tier. Route events, metrics and live counts keep the upstream's
words (tests/support/fake_upstream.py serves each tier's script; the captures are tests/fixtures/openrouter/).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import httpx
import openai
import pytest

from provider_canary.router.route_events import read_route_events
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openrouter"
MASKED_SSE = Script("raw", body=(CAPTURES / "masked-network-error.sse").read_bytes(), status=200)
MASKED_JSON = Script("raw", body=(CAPTURES / "masked-network-error.json").read_bytes(), status=200,
                     content_type="application/json")
NO_ENDPOINTS = Script("raw", status=404, content_type="application/json",
                      body=(CAPTURES / "no-endpoints-parameters-404.json").read_bytes())
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
           "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]


@contextmanager
def router_for(up: FakeUpstream, tmp: Path, models: tuple[str, ...] = ("t1", "t2"),
               route: dict[str, Any] | None = None, **settings: Any) -> Iterator[RunningRouter]:
    raw = {
        "router": {"first_chunk_budget_s": 2.0, "flush_interval_s": 0.05, "events_path": str(tmp / "events.jsonl"),
                   "savings_path": str(tmp / "savings.jsonl"), "publish_dir": str(tmp / "published"),
                   "events_db": str(tmp / "canary.duckdb"), **settings},
        "route": [{"model": "chat", **(route or {}),
                   "tier": [{"base_url": up.base_url, "model": m, "provider": {"only": [m]}} for m in models]}],
    }
    with start_router(parse_routes(raw), env={}) as running:
        yield running


def client(r: RunningRouter) -> openai.OpenAI:
    return openai.OpenAI(base_url=r.base_url, api_key="client-key", max_retries=0, timeout=30)


def streamed(r: RunningRouter, **extra: Any) -> tuple[str, set[str | None]]:
    text, providers = [], set()
    for ch in client(r).chat.completions.create(model="chat", messages=MESSAGES, stream=True, **extra):  # type: ignore[arg-type,call-overload]
        providers.add((ch.model_extra or {}).get("provider"))
        if ch.choices:
            text.append(ch.choices[0].delta.content or "")
    return "".join(text), providers


def events(tmp: Path) -> list[tuple[int, str]]:
    return [(e.tier, e.reason) for e in read_route_events(tmp / "events.jsonl")]


def live(tmp: Path) -> list[tuple[Any, ...]]:
    """Every live_requests row (read after the router stopped and flushed)."""
    con = duckdb.connect(str(tmp / "canary.duckdb"), read_only=True)
    try:
        return con.execute("SELECT tier, tag, outcome, quality, reason, sum(requests)::INT FROM live_requests "
                           "GROUP BY ALL ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_the_real_masked_failure_stream_is_answered_by_tier_two(tmp_path: Path) -> None:
    """issue 29: 483 of 609 clients got an empty reply while tier 2 was healthy; now none does."""
    with FakeUpstream({"t1": MASKED_SSE, "t2": Script("ok", text="Sunny in Paris", provider="Two")}) as up:
        with router_for(up, tmp_path) as r:
            texts = [streamed(r) for _ in range(3)]
            metrics = httpx.get(r.base_url.removesuffix("/v1") + "/metrics").text
    assert texts == [("Sunny in Paris", {"Two"})] * 3
    assert events(tmp_path) == [(1, "native_network_error")] * 3 + [(1, "circuit_opened")]  # 3 in a row: open
    assert 'reason="native_network_error"' in metrics
    rows = live(tmp_path)
    assert (1, "t1", "upstream_error", None, "network_error", 3) in rows  # the upstream's own word
    assert (2, "t2", "ok", None, None, 3) in rows


def test_the_real_masked_failure_json_is_answered_by_tier_two(tmp_path: Path) -> None:
    with FakeUpstream({"t1": MASKED_JSON, "t2": Script("ok", text="Sunny in Paris", provider="Two")}) as up:
        with router_for(up, tmp_path) as r:
            reply = client(r).chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
    assert reply.parse().choices[0].message.content == "Sunny in Paris" and reply.headers["x-canary-tier"] == "2"
    assert events(tmp_path) == [(1, "native_network_error")]
    assert (1, "t1", "upstream_error", None, "network_error", 1) in live(tmp_path)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_when_every_tier_fails_so_the_client_gets_a_clear_answer(tmp_path: Path, stream: bool) -> None:
    script = MASKED_SSE if stream else MASKED_JSON
    with FakeUpstream({"t1": script, "t2": script}) as up, router_for(up, tmp_path) as r:
        body = {"model": "chat", "messages": MESSAGES, "stream": stream}
        reply = httpx.post(r.base_url + "/chat/completions", json=body, timeout=30)
    assert reply.status_code == 503
    assert reply.json()["error"]["message"] == (
        "all 2 tiers failed (tier 1: native_network_error, tier 2: native_network_error)")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_a_plain_empty_stop_fails_over_and_the_last_tiers_empty_answer_is_handed_through(
    tmp_path: Path, stream: bool
) -> None:
    with FakeUpstream({"t1": Script("empty_stop"), "t2": Script("ok", text="Hello there", provider="Two")}) as up:
        with router_for(up, tmp_path) as r:
            if stream:
                assert streamed(r) == ("Hello there", {"Two"})
            else:
                reply = client(r).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
                assert reply.choices[0].message.content == "Hello there"
    assert events(tmp_path) == [(1, "empty_answer")]
    rows = live(tmp_path)
    assert (1, "t1", "ok", None, None, 1) in rows  # the exchange worked ...
    assert (1, "t1", "quality_fail", "empty", "empty_reply", 1) in rows  # ... its answer was empty

    with FakeUpstream({"t1": Script("empty_stop")}) as up, router_for(up, tmp_path, models=("t1",)) as r:
        if stream:
            assert streamed(r)[0] == ""  # the only tier: its answer, as it is
        else:
            raw = client(r).chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
            assert raw.parse().choices[0].message.content == ""
            assert raw.headers["x-canary-check-failed"] == "empty:empty_reply"


def test_the_404_no_endpoints_for_the_parameters_fails_over(tmp_path: Path) -> None:
    """Another tier's model may take the parameters (the capture: a real OpenRouter 404 body)."""
    with FakeUpstream({"t1": NO_ENDPOINTS, "t2": Script("ok", text="Hello", provider="Two")}) as up:
        with router_for(up, tmp_path) as r:
            assert streamed(r) == ("Hello", {"Two"})
    assert events(tmp_path) == [(1, "no_endpoints_for_parameters")]
    assert not [row for row in live(tmp_path) if row[0] == 1]  # the request's parameters: not the endpoint's fault


BAD_CALL = Script("tool_call", arguments='{"town": "Paris"}', provider="One")
GOOD_CALL = Script("tool_call", arguments='{"city": "Paris"}', provider="Two")


def test_a_non_streamed_tool_call_that_breaks_the_schema_is_asked_of_the_next_tier(tmp_path: Path) -> None:
    with FakeUpstream({"t1": BAD_CALL, "t2": GOOD_CALL}) as up, router_for(up, tmp_path) as r:
        raw = client(r).chat.completions.with_raw_response.create(model="chat", messages=MESSAGES, tools=TOOLS)  # type: ignore[arg-type]
    reply = raw.parse()
    [call] = reply.choices[0].message.tool_calls or []
    assert json.loads(call.function.arguments) == {"city": "Paris"} and raw.headers["x-canary-tier"] == "2"
    assert "x-canary-check-failed" not in raw.headers
    assert events(tmp_path) == [(1, "failed_check_schema_violation")]
    rows = live(tmp_path)
    assert (1, "t1", "quality_fail", "tools", "schema_violation", 1) in rows
    assert (2, "t2", "ok", "tools", "ok", 1) in rows


def test_when_every_tier_fails_the_check_the_client_gets_the_last_answer_with_a_header(tmp_path: Path) -> None:
    with FakeUpstream({"t1": BAD_CALL, "t2": BAD_CALL}) as up, router_for(up, tmp_path) as r:
        raw = client(r).chat.completions.with_raw_response.create(model="chat", messages=MESSAGES, tools=TOOLS)  # type: ignore[arg-type]
    assert raw.headers["x-canary-tier"] == "2"
    assert raw.headers["x-canary-check-failed"] == "tools:schema_violation"
    assert events(tmp_path) == [(1, "failed_check_schema_violation")]


def test_a_held_answer_is_handed_over_when_the_later_tiers_fail(tmp_path: Path) -> None:
    with FakeUpstream({"t1": BAD_CALL, "t2": Script("http_error", status=503)}) as up, router_for(up, tmp_path) as r:
        raw = client(r).chat.completions.with_raw_response.create(model="chat", messages=MESSAGES, tools=TOOLS)  # type: ignore[arg-type]
    assert raw.headers["x-canary-tier"] == "1" and raw.headers["x-canary-check-failed"] == "tools:schema_violation"
    assert events(tmp_path) == [(1, "failed_check_schema_violation"), (2, "http_503")]


def test_the_retry_is_configurable_per_route(tmp_path: Path) -> None:
    with FakeUpstream({"t1": BAD_CALL, "t2": GOOD_CALL}) as up:
        with router_for(up, tmp_path, route={"retry_failed_checks": False}) as r:
            raw = client(r).chat.completions.with_raw_response.create(model="chat", messages=MESSAGES, tools=TOOLS)  # type: ignore[arg-type]
        assert not up.for_model("t2")
    assert raw.headers["x-canary-tier"] == "1" and raw.headers["x-canary-check-failed"] == "tools:schema_violation"


def test_a_streamed_tool_call_is_judged_after_it_went_out_and_never_retried(tmp_path: Path) -> None:
    with FakeUpstream({"t1": BAD_CALL, "t2": GOOD_CALL}) as up, router_for(up, tmp_path) as r:
        stream = client(r).chat.completions.create(model="chat", messages=MESSAGES, tools=TOOLS, stream=True)  # type: ignore[arg-type]
        args = "".join(tc.function.arguments or "" for ch in stream for tc in (ch.choices[0].delta.tool_calls or [])
                       if ch.choices and tc.function)
        health = httpx.get(r.base_url.removesuffix("/v1") + "/healthz").json()
        assert not up.for_model("t2")
    assert json.loads(args) == {"town": "Paris"}  # the client got tier 1's call as it was
    assert (1, "t1", "quality_fail", "tools", "schema_violation", 1) in live(tmp_path)
    assert health["judge"]["dropped"] == 0
