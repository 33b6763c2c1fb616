"""Ready or not, through the real router: `/livez`, `/readyz` (lists present and fresh, no sink dropping), a tier
model's variant suffix finding its list, and an exhausted upstream pool (`max_connections`) answered 503
`router_overloaded` (the official `openai` client sees it) and counted as the router's, never a tier's."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from provider_canary.router.route_events import Batcher
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import start_router
from tasks.core.plan import model_slug
from tasks.core.types import RouteEvent
from tests.integration.test_router_metrics import scrape, total
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MESSAGES = [{"role": "user", "content": "Hello"}]


def publish(lists: Path, model: str, tags: list[str]) -> Path:
    lists.mkdir(parents=True, exist_ok=True)
    path = lists / f"{model_slug(model)}.json"
    path.write_text(json.dumps({"model": model, "ignore": tags, "entries": []}), encoding="utf-8")
    return path


class Refusing:
    """A route-event sink that is always busy (a database a notebook holds)."""

    def write(self, events: Sequence[RouteEvent]) -> None:
        raise OSError("busy")


def raw_routes(tmp: Path, base_url: str, models: tuple[str, ...], **settings: Any) -> dict[str, Any]:
    return {"router": {"flush_interval_s": 0.05, "publish_dir": str(tmp / "published"), "canary_interval_s": 600,
                       "events_path": str(tmp / "e.jsonl"), "savings_path": str(tmp / "s.jsonl"), **settings},
            "route": [{"model": "chat", "tier": [{"base_url": base_url, "model": m} for m in models]}]}


def test_readyz_names_what_is_missing_stale_or_dropping_and_livez_always_answers(tmp_path: Path) -> None:
    lists = tmp_path / "published"
    publish(lists, "meta-llama/llama-3.3-70b-instruct", ["bad"])  # the list of tier 1's base model
    events = [Batcher(Refusing(), "route-events", max_buffered=1)]
    scripts = {"meta-llama/llama-3.3-70b-instruct:nitro": Script("http_error", status=503),
               "t2": Script("ok", text="Tier two")}
    with FakeUpstream(scripts) as up:
        routes = parse_routes(raw_routes(tmp_path, up.base_url, tuple(scripts)))
        with start_router(routes, env={}, events=events) as r:
            base = r.base_url.removesuffix("/v1")
            assert httpx.get(base + "/livez").json() == {"live": True}
            missing = httpx.get(base + "/readyz")
            assert missing.status_code == 503 and missing.json()["ready"] is False
            assert [(x["reason"], x["tier"]) for x in missing.json()["reasons"]] == [("list_missing", 2)]
            publish(lists, "t2", [])
            assert httpx.get(base + "/readyz").json() == {"ready": True, "reasons": []}
            # tier 1 (a :nitro variant) merged its base model's list; its failover's event finds the sink busy
            reply = httpx.post(f"{r.base_url}/chat/completions", json={"model": "chat", "messages": MESSAGES})
            assert reply.status_code == 200 and reply.headers["x-canary-tier"] == "2"
            assert up.requests[0].json["provider"]["ignore"] == ["bad"]
            deadline = time.monotonic() + 10  # the walk's last route event may reach the sink just after the reply
            while not (dropping := httpx.get(base + "/readyz").json()["reasons"]) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert [(x["reason"], x.get("sink")) for x in dropping] == [("sink_dropping", "route-events")]
            an_hour_ago = time.time() - 3600
            os.utime(lists / "t2.json", (an_hour_ago, an_hour_ago))
            stale = httpx.get(base + "/readyz")
            assert stale.status_code == 503
            assert [x["reason"] for x in stale.json()["reasons"]] == ["list_stale", "sink_dropping"]
            assert httpx.get(base + "/healthz").json()["lists_missing"] == 0


def test_an_exhausted_pool_is_the_routers_503_and_no_tiers_failure(tmp_path: Path) -> None:
    """One upstream connection, held 3 s by a slow non-streamed answer: a stream waiting for it past its
    first-chunk budget (0.3 s), and a non-streamed request past the pool timeout (connect_timeout_s 0.5 s), are
    both 503 router_overloaded; no failover, no route event, no tier cools down; the held request is served."""
    scripts = {"t1": Script("slow_first", text="Slow but fine", delay_s=3.0), "t2": Script("ok")}
    settings = {"max_connections": 1, "first_chunk_budget_s": 0.3, "connect_timeout_s": 0.5}
    with FakeUpstream(scripts) as up, start_router(parse_routes(raw_routes(tmp_path, up.base_url, ("t1", "t2"),
                                                                          **settings)), env={}) as r:
        oai = openai.OpenAI(base_url=r.base_url, api_key="k", max_retries=0, timeout=20)
        held: dict[str, str | None] = {}
        first = threading.Thread(target=lambda: held.update(text=oai.chat.completions.create(
            model="chat", messages=MESSAGES).choices[0].message.content))  # type: ignore[arg-type]
        first.start()
        deadline = time.monotonic() + 10
        while not up.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        for stream in (True, False):
            with pytest.raises(openai.InternalServerError) as caught:
                oai.chat.completions.create(model="chat", messages=MESSAGES, stream=stream)  # type: ignore[call-overload]
            assert caught.value.status_code == 503 and caught.value.code == "router_overloaded"
            assert caught.value.response.headers["retry-after"] == "1"
        first.join(10)
        fams = scrape(r)
        health = httpx.get(r.base_url.removesuffix("/v1") + "/healthz").json()
    assert held == {"text": "Slow but fine"} and len(up.requests) == 1
    assert total(fams, "canary_router_requests_total", outcome="router_overloaded", route="model:chat") == 2
    assert total(fams, "canary_router_failovers_total") == 0 and health["cooling"] == 0
    duration = "gen_ai_client_operation_duration_seconds_count"
    assert total(fams, duration, error_type="router_overloaded", tier="") == 2
    assert not (tmp_path / "e.jsonl").exists() or (tmp_path / "e.jsonl").read_text() == ""
