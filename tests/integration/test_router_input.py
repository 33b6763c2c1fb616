"""Issue 29 item 7 through the real router: bad input gets a clear answer and never blames an endpoint, and a
client that leaves before the first chunk cancels the walk over tiers (tests/support/fake_upstream.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.router.route_events import read_route_events
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@contextmanager
def router_for(up: FakeUpstream, tmp: Path, models: tuple[str, ...] = ("t1", "t2"), **settings: Any
               ) -> Iterator[RunningRouter]:
    raw = {"router": {"flush_interval_s": 0.05, "events_path": str(tmp / "events.jsonl"),
                      "savings_path": str(tmp / "savings.jsonl"), "publish_dir": str(tmp / "published"), **settings},
           "route": [{"model": "chat", "tier": [{"base_url": up.base_url, "model": m} for m in models]}]}
    with start_router(parse_routes(raw), env={}) as running:
        yield running


def chat(r: RunningRouter, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(r.base_url + "/chat/completions", content=content, timeout=60,
                      headers={"content-type": "application/json", **headers})


def test_a_body_over_the_cap_is_refused_with_a_clear_413_and_never_sent(tmp_path: Path) -> None:
    big = json.dumps({"model": "chat", "messages": [{"role": "user", "content": "x" * 200_000}]}).encode()
    with FakeUpstream({"t1": Script("ok"), "t2": Script("ok")}) as up:
        with router_for(up, tmp_path, max_body_bytes=100_000) as r:
            declared = chat(r, big)

            def chunks() -> Iterator[bytes]:  # no Content-Length: the cap is counted as the body arrives
                for i in range(0, len(big), 8192):
                    yield big[i:i + 8192]

            streamed = httpx.post(r.base_url + "/chat/completions", content=chunks(), timeout=60)
            fine = chat(r, json.dumps({"model": "chat", "messages": [{"role": "user", "content": "hi"}]}).encode())
            metrics = httpx.get(r.base_url.removesuffix("/v1") + "/metrics").text
        assert up.requests and all(len(q.body) < 100_000 for q in up.requests)  # only the small one went out
    for reply in (declared, streamed):
        assert reply.status_code == 413
        assert reply.json()["error"]["message"] == (
            "the request body is over the router's limit of 100000 bytes (router.max_body_bytes)")
    assert fine.status_code == 200
    assert 'canary_router_requests_refused_total{reason="body_too_large"} 2.0' in metrics


def test_a_json_body_nested_100k_deep_is_a_400_not_a_500(tmp_path: Path) -> None:
    with FakeUpstream({"t1": Script("ok")}) as up, router_for(up, tmp_path, models=("t1",)) as r:
        replies = [chat(r, b"[" * 100_000 + b"]" * 100_000),
                   chat(r, b'{"model": "chat", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")]
        assert not up.requests
    assert [x.status_code for x in replies] == [400, 400]
    assert replies[0].json()["error"]["message"] == "the request body is nested too deep to read"


def test_a_megabyte_prompt_is_answered_not_a_500(tmp_path: Path) -> None:
    """bpe-openai refuses to count a text of a megabyte ('Input too long to encode safely'): on main that was a
    500 for the client. The savers skip such a prompt (named), the savings are not measured, the answer goes."""
    body = json.dumps({"model": "chat", "messages": [{"role": "user", "content": "word " * 300_000}]}).encode()
    with FakeUpstream({"t1": Script("ok", text="done")}) as up, router_for(up, tmp_path, models=("t1",)) as r:
        reply = chat(r, body)
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "done"
    assert reply.headers["x-canary-savers-failed"] == "pipeline"


@pytest.mark.timing  # the stall it guards against is measured in wall time: run alone
def test_a_large_body_never_blames_a_healthy_endpoint_of_another_request(tmp_path: Path) -> None:
    """issue 29: a 50 MB body stalled the event loop ~2.5 s, and concurrent streams were failed over with
    first_chunk_timeout against healthy endpoints. A body under the cap keeps other requests' budgets."""
    big = json.dumps({"model": "chat", "messages": [{"role": "user", "content": "word  " * 2_000_000}]}).encode()
    with FakeUpstream({"t1": Script("ok", text="one two three"), "t2": Script("ok")}) as up:
        with router_for(up, tmp_path, first_chunk_budget_s=0.5) as r:
            outcome: dict[str, Any] = {}
            sender = threading.Thread(target=lambda: outcome.setdefault("big", chat(r, big)))
            sender.start()
            texts = []
            while sender.is_alive():
                with httpx.stream("POST", r.base_url + "/chat/completions", timeout=30,
                                  json={"model": "chat", "stream": True,
                                        "messages": [{"role": "user", "content": "hi"}]}) as s:
                    texts.append(s.read())
            sender.join()
            time.sleep(0.2)
    assert outcome["big"].status_code == 200 and texts
    assert [e.reason for e in read_route_events(tmp_path / "events.jsonl")] == []


def test_a_client_that_leaves_before_the_first_chunk_cancels_the_walk(tmp_path: Path) -> None:
    """issue 29: the router noticed nothing and opened the next tier's request 4.6 s later."""
    scripts = {"t1": Script("stall_after_headers", delay_s=30), "t2": Script("ok")}
    with FakeUpstream(scripts) as up, router_for(up, tmp_path, first_chunk_budget_s=1.5) as r:
        body = {"model": "chat", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(r.base_url + "/chat/completions", json=body, timeout=httpx.Timeout(10, read=0.4))
        time.sleep(2.5)  # past tier 1's budget: on main, tier 2 was asked now
        metrics = httpx.get(r.base_url.removesuffix("/v1") + "/metrics").text
        asked = [q.model for q in up.requests]
    assert asked == ["t1"]
    assert read_route_events(tmp_path / "events.jsonl") == []  # the client's leaving is no endpoint's failure
    assert 'canary_router_clients_gone_total{route="model:chat"} 1.0' in metrics


def test_a_route_name_outside_ascii_reaches_the_client_escaped(tmp_path: Path) -> None:
    with FakeUpstream({"t1": Script("ok")}) as up:
        raw = {"router": {"events_path": str(tmp_path / "e.jsonl"), "savings_path": str(tmp_path / "s.jsonl"),
                          "publish_dir": str(tmp_path / "p")},
               "route": [{"model": "модель", "tier": [{"base_url": up.base_url, "model": "t1"}]}]}
        with start_router(parse_routes(raw), env={}) as r:
            reply = httpx.post(r.base_url + "/chat/completions", timeout=30,
                               json={"model": "модель", "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == 200
    assert reply.headers["x-canary-route"] == "model:%D0%BC%D0%BE%D0%B4%D0%B5%D0%BB%D1%8C"
