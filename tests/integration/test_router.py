"""Acceptance: the router in front of the OpenRouter simulator, driven by the official `openai` client.

Two endpoints of one model: `primary` (faulty per test) and `backup` (healthy). Tier 1 pins the primary,
tier 2 the backup (`only`, no fallbacks), so every chunk's `provider` says which tier produced it. The
simulator's reply is deterministic per (model, messages), so tier 2's complete answer is known in advance.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import provider_canary.simulator.fleet as simulator_fleet
import provider_canary.simulator.server as simulator_server
from provider_canary.router.route_events import read_route_events
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from tasks.core.plan import model_slug

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

MODEL = "acme/roleplay-1"
MESSAGES = [
    {"role": "system", "content": "You are Ana, a travelling bard."},
    {"role": "user", "content": "Tell me about the harbour town."},
]
TIME_SCALE = 0.01  # the simulator's 12 s slow start becomes 0.12 s; stall max 300 s becomes 3 s


def fleet(primary_faults: list[dict[str, Any]]) -> Any:
    endpoint = {"pricing": {"prompt": "0.0000002", "completion": "0.0000006"}}
    return simulator_fleet.parse_fleet(
        {
            "models": [
                {
                    "id": MODEL,
                    "endpoints": [
                        {"tag": "primary", "provider_name": "Primary", **endpoint, "faults": primary_faults},
                        {"tag": "backup", "provider_name": "Backup", **endpoint},
                    ],
                }
            ]
        }
    )


def tier(sim: Any, tag: str) -> dict[str, Any]:
    return {
        "base_url": sim.base_url,
        "model": MODEL,
        "api_key_env": "SIM_KEY",
        "provider": {"only": [tag], "allow_fallbacks": False},
    }


@contextmanager
def stack(
    tmp: Path, primary_faults: list[dict[str, Any]], **settings: Any
) -> Iterator[tuple[Any, RunningRouter]]:
    with simulator_server.start_simulator(fleet(primary_faults), time_scale=TIME_SCALE) as sim:
        raw = {
            "router": {
                "first_chunk_budget_s": 1.0,
                "idle_timeout_s": 5.0,
                "flush_interval_s": 0.05,
                "savers": [],
                "publish_dir": str(tmp / "published"),
                "events_path": str(tmp / "events.jsonl"),
                "savings_path": str(tmp / "savings.jsonl"),
                **settings,
            },
            "route": [{"model": "chat", "tier": [tier(sim, "primary"), tier(sim, "backup")]}],
        }
        with start_router(parse_routes(raw), env={"SIM_KEY": sim.api_key}) as running:
            yield sim, running


def via_router(r: RunningRouter) -> tuple[str, list[str | None]]:
    c = openai.OpenAI(base_url=r.base_url, api_key="client", max_retries=0, timeout=30)
    text, providers = [], []
    for ch in c.chat.completions.create(model="chat", messages=MESSAGES, stream=True):  # type: ignore[arg-type]
        providers.append((ch.model_extra or {}).get("provider"))
        if ch.choices:
            text.append(ch.choices[0].delta.content or "")
    return "".join(text), providers


def direct(sim: Any, tag: str) -> str:
    """Tier `tag`'s complete answer, asked directly (the same request the router forwards)."""
    c = openai.OpenAI(base_url=sim.base_url, api_key=sim.api_key, max_retries=0, timeout=30)
    reply = c.chat.completions.create(
        model=MODEL,
        messages=MESSAGES,  # type: ignore[arg-type]
        extra_body={"provider": {"only": [tag], "allow_fallbacks": False}},
    )
    return reply.choices[0].message.content or ""


def reasons(tmp: Path) -> list[tuple[int, str]]:
    return [(e.tier, e.reason) for e in read_route_events(tmp / "events.jsonl")]


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ({"kind": "stall_after_headers"}, "first_chunk_timeout"),
        ({"kind": "die_after_tokens", "tokens": 0}, "stream_error_before_commit"),
    ],
    ids=["stall-after-headers", "headers-then-death"],
)
def test_tier_one_fails_before_content_and_the_client_gets_tier_two_once(
    tmp_path: Path, fault: dict[str, Any], reason: str
) -> None:
    with stack(tmp_path, [fault]) as (sim, r):
        expected = direct(sim, "backup")
        started = time.monotonic()
        text, providers = via_router(r)
        elapsed = time.monotonic() - started
    assert text == expected and len(expected) > 100  # complete, once
    assert set(providers) == {"Backup"}  # not one chunk from tier 1
    assert elapsed < 1.0 + 2.0  # one first-chunk budget, not the 3 s stall
    assert reasons(tmp_path) == [(1, reason)]


def test_tier_one_dies_after_its_first_chunk_and_the_client_sees_a_clear_error(tmp_path: Path) -> None:
    with stack(tmp_path, [{"kind": "die_after_tokens", "tokens": 1}]) as (sim, r):
        full = direct(sim, "backup")
        c = openai.OpenAI(base_url=r.base_url, api_key="client", max_retries=0, timeout=30)
        seen, providers = [], set()
        with pytest.raises(openai.APIError) as info:
            for ch in c.chat.completions.create(model="chat", messages=MESSAGES, stream=True):  # type: ignore[arg-type]
                providers.add((ch.model_extra or {}).get("provider"))
                seen.append(ch.choices[0].delta.content or "" if ch.choices else "")
    partial = "".join(seen)
    assert partial and full.startswith(partial) and len(partial) < len(full) / 2  # tier 1's start only
    assert providers == {"Primary"}  # never tier 2's text spliced in
    assert "incomplete" in info.value.message
    assert reasons(tmp_path) == [(1, "stream_error_after_commit")]


def test_a_429_fails_over_and_tier_one_cools_down_for_retry_after(tmp_path: Path) -> None:
    fault = {"kind": "http_error_before_stream", "status": 429, "retry_after_s": 1}
    with stack(tmp_path, [fault]) as (sim, r):
        first, p1 = via_router(r)
        second, p2 = via_router(r)
        assert reasons(tmp_path) in ([], [(1, "http_429")])  # flushed within 50 ms
        time.sleep(0.2)
        assert reasons(tmp_path) == [(1, "http_429")]  # the second request never asked tier 1
        time.sleep(1.0)
        third, p3 = via_router(r)
        time.sleep(0.2)
    assert first == second == third and set(p1 + p2 + p3) == {"Backup"}
    assert reasons(tmp_path) == [(1, "http_429"), (1, "http_429")]  # tried again after the cooldown


def test_tier_order_is_kept_when_the_lower_tier_is_faster(tmp_path: Path) -> None:
    slow = {"kind": "slow_first_token", "delay_s": 30, "keepalive_s": 5}  # 0.3 s: slower, within budget
    with stack(tmp_path, [slow]) as (sim, r):
        runs = [via_router(r) for _ in range(3)]
    assert all(set(providers) == {"Primary"} for _, providers in runs)
    assert reasons(tmp_path) == []


def test_the_canary_ignore_list_is_merged_into_provider_ignore(tmp_path: Path) -> None:
    """One tier that prefers `primary` with fallbacks: publishing `primary` as ignored moves it to backup."""
    published = tmp_path / "published"
    published.mkdir()
    with simulator_server.start_simulator(fleet([]), time_scale=TIME_SCALE) as sim:
        raw = {
            "router": {
                "publish_dir": str(published),
                "savers": [],
                "events_path": str(tmp_path / "e.jsonl"),
                "savings_path": str(tmp_path / "s.jsonl"),
            },
            "route": [
                {
                    "model": "chat",
                    "tier": [
                        {
                            "base_url": sim.base_url,
                            "model": MODEL,
                            "api_key_env": "SIM_KEY",
                            "provider": {"order": ["primary"]},
                        }
                    ],
                }
            ],
        }
        with start_router(parse_routes(raw), env={"SIM_KEY": sim.api_key}) as r:
            _, before = via_router(r)
            (published / f"{model_slug(MODEL)}.json").write_text(
                json.dumps(
                    {
                        "model": MODEL,
                        "ignore": ["primary"],
                        "entries": [{"tag": "primary", "layer": "canary"}],
                    }
                )
            )
            _, after = via_router(r)
            (published / f"{model_slug(MODEL)}.json").write_text(
                json.dumps({"model": MODEL, "ignore": ["backup", "primary"], "entries": []})
            )
            response = httpx.post(
                r.base_url + "/chat/completions", timeout=30, json={"model": "chat", "messages": MESSAGES}
            )
    assert set(before) == {"Primary"} and set(after) == {"Backup"}
    # both ignored: the upstream's 404 "No allowed providers" is the tier's, so the router says every tier failed
    assert response.status_code == 503 and "tier 1: no_allowed_providers" in response.text, response.text


def publish(published: Path, *tags: str) -> None:
    published.mkdir(exist_ok=True)
    entries = [{"tag": t, "layer": "canary"} for t in tags]
    doc = {"model": MODEL, "ignore": sorted(tags), "entries": entries}
    (published / f"{model_slug(MODEL)}.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_a_tier_whose_pinned_providers_are_all_quarantined_is_skipped(tmp_path: Path, stream: bool) -> None:
    """The README's example right after the demo: tier 1 pins one provider the canary suspended; the route
    goes on to tier 2 (no request to tier 1), and the skip is recorded with its reason."""
    publish(tmp_path / "published", "primary")
    with stack(tmp_path, []) as (sim, r):
        if stream:
            text, providers = via_router(r)
            assert text and set(providers) == {"Backup"}
        else:
            response = httpx.post(
                r.base_url + "/chat/completions", timeout=30, json={"model": "chat", "messages": MESSAGES}
            )
            assert response.status_code == 200, response.text
            assert response.headers["x-canary-tier"] == "2" and response.json()["provider"] == "Backup"
        time.sleep(0.2)  # the event sink flushes every 50 ms
    assert reasons(tmp_path) == [(1, "pinned_providers_excluded")]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_no_allowed_providers_fails_over_to_the_next_tier(tmp_path: Path, stream: bool) -> None:
    """A tier the router cannot tell is emptied (no pin, here `order` with fallbacks) but that the upstream
    answers 404 "No allowed providers" for: the next tier is tried, not the client blamed."""
    publish(tmp_path / "published", "primary")
    with simulator_server.start_simulator(fleet([]), time_scale=TIME_SCALE) as sim:
        emptied = {**tier(sim, "primary"), "provider": {"only": ["primary", "gone"]}}
        raw = {
            "router": {
                "flush_interval_s": 0.05,
                "savers": [],
                "publish_dir": str(tmp_path / "published"),
                "events_path": str(tmp_path / "events.jsonl"),
                "savings_path": str(tmp_path / "savings.jsonl"),
            },
            "route": [{"model": "chat", "tier": [emptied, tier(sim, "backup")]}],
        }
        with start_router(parse_routes(raw), env={"SIM_KEY": sim.api_key}) as r:
            body = {"model": "chat", "messages": MESSAGES, "stream": stream}
            response = httpx.post(r.base_url + "/chat/completions", timeout=30, json=body)
            time.sleep(0.2)
    assert response.status_code == 200 and response.headers["x-canary-tier"] == "2", response.text
    assert reasons(tmp_path) == [(1, "no_allowed_providers")]
