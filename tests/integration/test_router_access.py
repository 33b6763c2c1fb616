"""Client keys through the real router and the official `openai` client (provider_canary/router/access.py,
provider_canary/router/clients.py): no key or a wrong one is `AuthenticationError` (401 `invalid_api_key`, OpenAI's
error shape) and no upstream is asked; a client over its `requests_per_minute` is `RateLimitError` (429
`rate_limit_exceeded`, `Retry-After`) and no endpoint is blamed; a key route's key is a client too; the client's name
reaches route events, logs and metrics, the key nothing."""

from __future__ import annotations

import hashlib
import logging
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
from tests.integration.test_router_metrics import scrape, total
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

KEY_A, KEY_R = "sk-canary-team-a-secret-0123456789", "sk-canary-key-route-secret-9876"
MESSAGES = [{"role": "user", "content": "Hello"}]


def sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@contextmanager
def gateway(up: FakeUpstream, tmp: Path, rpm: int = 0) -> Iterator[RunningRouter]:
    tiers = [{"base_url": up.base_url, "model": m, "api_key_env": "TIER_KEY"} for m in ("t1", "t2")]
    raw: dict[str, Any] = {
        "router": {"flush_interval_s": 0.05, "events_path": str(tmp / "events.jsonl"),
                   "savings_path": str(tmp / "savings.jsonl"), "publish_dir": str(tmp / "published")},
        "client": [{"name": "team-a", "key_sha256": sha(KEY_A), "requests_per_minute": rpm}],
        "route": [{"model": "chat", "tier": tiers}, {"api_key_sha256": sha(KEY_R), "tier": tiers[1:]}],
    }
    with start_router(parse_routes(raw), env={"TIER_KEY": "sk-or-v1-tier-secret"}) as running:
        yield running


def client(r: RunningRouter, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=r.base_url, api_key=key, max_retries=0, timeout=20)


def test_without_a_known_key_the_client_gets_401_and_no_upstream_is_asked(tmp_path: Path) -> None:
    with FakeUpstream({"t1": Script("ok"), "t2": Script("ok")}) as up, gateway(up, tmp_path) as r:
        for key in ("sk-canary-wrong", KEY_A + "x"):
            with pytest.raises(openai.AuthenticationError) as caught:
                client(r, key).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
            assert caught.value.status_code == 401 and caught.value.code == "invalid_api_key"
            error = caught.value.response.json()["error"]
            assert error["type"] == "invalid_request_error" and error["param"] is None and error["message"]
            assert set(error) == {"message", "type", "param", "code"}
        no_header = httpx.post(f"{r.base_url}/chat/completions", json={"model": "chat", "messages": MESSAGES})
        assert no_header.status_code == 401 and no_header.json()["error"]["code"] == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):  # every /v1/* path
            client(r, "sk-canary-wrong").models.list()
        assert up.requests == []
        base = r.base_url.removesuffix("/v1")
        assert httpx.get(base + "/healthz").status_code == 200 and httpx.get(base + "/livez").status_code == 200
        fams = scrape(r)  # /metrics needs no key either
    assert total(fams, "canary_router_client_refusals_total", client="", reason="invalid_api_key") == 4
    assert total(fams, "canary_router_requests_refused_total", reason="invalid_api_key") == 4
    assert total(fams, "canary_router_requests_total") == 0 and total(fams, "canary_router_client_requests_total") == 0


def test_a_known_key_is_served_and_named_in_events_logs_and_metrics_never_shown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    scripts = {"t1": Script("http_error", status=503), "t2": Script("ok", text="Tier two answers")}
    with FakeUpstream(scripts) as up, gateway(up, tmp_path) as r:
        reply = client(r, KEY_A).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
        assert reply.choices[0].message.content == "Tier two answers"
        assert [m.id for m in client(r, KEY_A).models.list()] == ["chat"]
        by_route = client(r, KEY_R).chat.completions.create(model="any", messages=MESSAGES)  # type: ignore[arg-type]
        assert by_route.choices[0].message.content == "Tier two answers"  # the key route: a client too
        fams = scrape(r)
        text = httpx.get(r.base_url.removesuffix("/v1") + "/metrics").text
    assert {q.headers.get("authorization") for q in up.requests} == {"Bearer sk-or-v1-tier-secret"}  # never theirs
    events = read_route_events(tmp_path / "events.jsonl")
    assert [(e.tier, e.reason, e.client) for e in events] == [(1, "http_503", "team-a")]
    assert "route model:chat tier 1 degraded: http_503" in caplog.text and "client team-a" in caplog.text
    assert total(fams, "canary_router_client_requests_total", client="team-a") == 2
    assert total(fams, "canary_router_client_requests_total", client=f"key:{sha(KEY_R)[:12]}") == 1
    for secret in (KEY_A, KEY_R, sha(KEY_A), sha(KEY_R)):
        assert secret not in caplog.text and secret not in text
        assert secret not in (tmp_path / "events.jsonl").read_text()


def test_a_client_over_its_rate_gets_429_and_no_endpoint_is_blamed(tmp_path: Path) -> None:
    with FakeUpstream({"t1": Script("ok"), "t2": Script("ok")}) as up, gateway(up, tmp_path, rpm=2) as r:
        for _ in range(2):  # a full bucket: two at once, then one every 30 s
            client(r, KEY_A).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
        with pytest.raises(openai.RateLimitError) as caught:
            client(r, KEY_A).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
        assert caught.value.status_code == 429 and caught.value.code == "rate_limit_exceeded"
        assert set(caught.value.response.json()["error"]) == {"message", "type", "param", "code"}
        assert 1 <= int(caught.value.response.headers["retry-after"]) <= 30
        assert [m.id for m in client(r, KEY_A).models.list()] == ["chat"]  # listing models is not counted
        fams = scrape(r)
    assert len(up.requests) == 2
    assert total(fams, "canary_router_client_refusals_total", client="team-a", reason="rate_limit_exceeded") == 1
    assert total(fams, "canary_router_failovers_total") == 0 and total(fams, "canary_router_requests_total") == 2
    assert read_route_events(tmp_path / "events.jsonl") == []
