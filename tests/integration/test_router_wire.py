"""The wire as clients expect it (issue 40 item 3), through the real router and the official `openai` client,
against a scripted upstream that compresses, cuts the connection after the finish chunk, leaves a chunked body
unterminated, goes quiet, and answers 429 (tests/support/wire_upstream.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from provider_canary.router.route_events import read_route_events
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from tests.support.wire_upstream import NO_PROVIDERS, Script, WireUpstream

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

MESSAGES = [{"role": "user", "content": "Tell me about the harbour."}]


@contextmanager
def router_for(up: WireUpstream, tmp: Path, models: tuple[str, ...] = ("t1", "t2"),
               **settings: Any) -> Iterator[RunningRouter]:
    raw = {"router": {"first_chunk_budget_s": 2.0, "idle_timeout_s": 0.5, "flush_interval_s": 0.05,
                      "events_path": str(tmp / "events.jsonl"), "savings_path": str(tmp / "savings.jsonl"),
                      "publish_dir": str(tmp / "published"), **settings},
           "route": [{"model": "chat", "tier": [{"base_url": up.base_url, "model": m} for m in models]}]}
    with start_router(parse_routes(raw), env={}) as running:
        yield running


def client(r: RunningRouter) -> openai.OpenAI:
    return openai.OpenAI(base_url=r.base_url, api_key="client-key", max_retries=0, timeout=20)


def streamed(r: RunningRouter) -> tuple[str, list[str | None]]:
    """The text and the finish reasons the official client read (it raises on an error chunk)."""
    text, finishes = [], []
    for ch in client(r).chat.completions.create(model="chat", messages=MESSAGES, stream=True):  # type: ignore[arg-type]
        if ch.choices:
            text.append(ch.choices[0].delta.content or "")
            finishes.append(ch.choices[0].finish_reason)
    return "".join(text), finishes


def reasons(tmp: Path) -> list[tuple[int, str]]:
    return [(e.tier, e.reason) for e in read_route_events(tmp / "events.jsonl")]


def test_upstream_requests_ask_for_identity_and_a_gzip_event_stream_relays(tmp_path: Path) -> None:
    with WireUpstream({"t1": Script("gzip_stream", text="Compressed all the way"), "t2": Script("ok")}) as up:
        with router_for(up, tmp_path) as r:
            text, finishes = streamed(r)
            raw = httpx.post(r.base_url + "/chat/completions", json={"model": "chat", "messages": MESSAGES,
                                                                     "stream": True}, timeout=10)
        sent = up.for_model("t1")[0].headers
    assert text == "Compressed all the way" and finishes[-1] == "stop"
    assert sent["accept-encoding"] == "identity"
    assert raw.headers.get("content-encoding") is None and raw.content.endswith(b"data: [DONE]\n\n")
    assert up.for_model("t2") == [] and reasons(tmp_path) == []


def test_a_gzip_encoded_404_on_a_stream_fails_over_as_the_404_it_is(tmp_path: Path) -> None:
    scripts = {"t1": Script("gzip_error", status=404, body=NO_PROVIDERS), "t2": Script("ok", text="From two")}
    with WireUpstream(scripts) as up, router_for(up, tmp_path) as r:
        assert streamed(r)[0] == "From two"
        assert client(r).chat.completions.create(model="chat", messages=MESSAGES).choices[0].message.content \
            == "From two"  # type: ignore[arg-type]
    assert reasons(tmp_path) == [(1, "no_allowed_providers")] * 2


def test_a_gzip_encoded_answer_and_error_reach_the_client_decoded(tmp_path: Path) -> None:
    scripts = {"t1": Script("gzip_json", text="Plain JSON"), "t2": Script("gzip_error", status=400)}
    with WireUpstream(scripts) as up, router_for(up, tmp_path, models=("t1",)) as r:
        assert client(r).chat.completions.create(model="chat", messages=MESSAGES).choices[0].message.content \
            == "Plain JSON"  # type: ignore[arg-type]
        up.scripts["t1"] = scripts["t2"]
        with pytest.raises(openai.BadRequestError) as info:
            streamed(r)
    assert info.value.body == {"message": "Provider returned error", "code": 400}


@pytest.mark.parametrize("kind", ["reset_after_finish", "unterminated", "idle_after_finish"])
def test_a_stream_whose_finish_chunk_arrived_ends_cleanly_and_counts_ok(tmp_path: Path, kind: str) -> None:
    """After the finish chunk (and the usage chunk) the answer is whole: a reset, a chunked body never
    terminated, or silence past idle_timeout_s must not turn it into an error the SDK raises."""
    with WireUpstream({"t1": Script(kind, text="A whole answer", delay_s=5), "t2": Script("ok")}) as up:
        with router_for(up, tmp_path) as r:
            text, finishes = streamed(r)
            raw = httpx.post(r.base_url + "/chat/completions", json={"model": "chat", "messages": MESSAGES,
                                                                     "stream": True}, timeout=10)
            metrics = httpx.get(r.base_url.removesuffix("/v1") + "/metrics").text
        assert up.for_model("t2") == []
    assert text == "A whole answer" and "stop" in finishes
    assert raw.content.endswith(b"data: [DONE]\n\n") and b'"error"' not in raw.content
    assert reasons(tmp_path) == [] and "canary_router_stream_failures_after_commit_total{" not in metrics


def test_every_tier_answering_429_is_a_429_the_client_backs_off_from(tmp_path: Path) -> None:
    scripts = {"t1": Script("http_error", status=429, retry_after="20"),
               "t2": Script("http_error", status=429, retry_after="900")}
    with WireUpstream(scripts) as up, router_for(up, tmp_path) as r:
        with pytest.raises(openai.RateLimitError) as info:
            client(r).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
        with pytest.raises(openai.RateLimitError) as streamed_info:
            streamed(r)
    for caught in (info.value, streamed_info.value):
        assert caught.status_code == 429 and caught.code == "rate_limit_exceeded"
        assert caught.response.headers["retry-after"] == "20"  # the smallest an upstream gave (both cooling now)
    error: dict[str, Any] = info.value.body  # type: ignore[assignment]
    assert error["type"] == "requests" and error["metadata"]["code"] == 429


def test_the_routers_own_errors_have_openais_shape(tmp_path: Path) -> None:
    with WireUpstream({"t1": Script("http_error", status=503)}) as up:
        with router_for(up, tmp_path, models=("t1",), max_body_bytes=2048) as r:
            c = client(r)
            with pytest.raises(openai.NotFoundError) as no_model:
                c.chat.completions.create(model="nope", messages=MESSAGES)  # type: ignore[arg-type]
            with pytest.raises(openai.InternalServerError) as failed:
                c.chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
            too_big = httpx.post(r.base_url + "/chat/completions", content=b"x" * 4096, timeout=10)
            not_json = httpx.post(r.base_url + "/chat/completions", content=b"{", timeout=10)
            unknown = httpx.get(r.base_url + "/embeddings", timeout=10)
            wrong_method = httpx.get(r.base_url + "/chat/completions", timeout=10)
    assert no_model.value.code == "model_not_found" and no_model.value.param == "model"
    assert failed.value.status_code == 503 and failed.value.code == "all_tiers_failed"
    for response, status, code in ((too_big, 413, "request_too_large"), (not_json, 400, "not_json"),
                                   (unknown, 404, "not_found"), (wrong_method, 405, "method_not_allowed")):
        error = response.json()["error"]
        assert response.status_code == status and response.headers["content-type"] == "application/json"
        assert (error["code"], error["metadata"]["code"]) == (code, status)
        assert isinstance(error["type"], str) and "param" in error
    assert unknown.json()["error"]["message"] == "Invalid URL (GET /v1/embeddings)"


def test_models_retrieve_answers_for_a_route_and_404s_for_anything_else(tmp_path: Path) -> None:
    raw = {"router": {"events_path": str(tmp_path / "e.jsonl"), "savings_path": str(tmp_path / "s.jsonl")},
           "route": [{"model": name, "tier": [{"base_url": "http://127.0.0.1:9/api/v1", "model": "m"}]}
                     for name in ("chat", "acme/chat-large")]}
    with start_router(parse_routes(raw), env={}) as r:
        c = client(r)
        assert c.models.retrieve("chat").id == "chat"
        assert c.models.retrieve("acme/chat-large").owned_by == "canary-router"
        with pytest.raises(openai.NotFoundError) as info:
            c.models.retrieve("gpt-4o")
    assert info.value.code == "model_not_found"


def test_cors_preflight_is_answered_only_when_origins_are_set(tmp_path: Path) -> None:
    origin = "https://app.example"
    preflight = {"origin": origin, "access-control-request-method": "POST",
                 "access-control-request-headers": "authorization,content-type,x-stainless-os"}
    with WireUpstream({"t1": Script("ok", text="hi")}) as up:
        with router_for(up, tmp_path / "a", models=("t1",), cors_origins=[origin]) as r:
            allowed = httpx.options(r.base_url + "/chat/completions", headers=preflight, timeout=10)
            answer = httpx.post(r.base_url + "/chat/completions", headers={"origin": origin}, timeout=10,
                                json={"model": "chat", "messages": MESSAGES})
            other = httpx.options(r.base_url + "/chat/completions", timeout=10,
                                  headers={**preflight, "origin": "https://evil.example"})
        with router_for(up, tmp_path / "b", models=("t1",)) as r:
            closed = httpx.options(r.base_url + "/chat/completions", headers=preflight, timeout=10)
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == origin
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == origin
    assert "x-canary-tier" in answer.headers["access-control-expose-headers"]
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    assert closed.status_code == 405 and closed.json()["error"]["code"] == "method_not_allowed"
    assert "access-control-allow-origin" not in closed.headers
