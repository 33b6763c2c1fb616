"""The router end to end against scripted loopback upstreams (tests/support/fake_upstream.py), with the
official `openai` client: failover before the commit, loud failure after it, cooldowns, order, ignore
merge, savers.
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

from provider_canary.router import savings
from provider_canary.router.route_events import read_route_events
from provider_canary.router.routes import key_id
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from provider_canary.router.tokens import count_body
from tasks.core.plan import model_slug
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ENV = {"TIER_KEY": "sk-or-v1-tier-secret"}
MESSAGES = [
    {"role": "system", "content": "You are   Ana."},
    {"role": "system", "content": "You are Ana."},
    {"role": "user", "content": "Tell  me    a story.\n\n\n\n\nPlease."},
]


@contextmanager
def router_for(
    up: FakeUpstream, tmp: Path, models: tuple[str, ...] = ("t1", "t2"), **settings: Any
) -> Iterator[RunningRouter]:
    raw = {
        "router": {
            "first_chunk_budget_s": 0.5,
            "idle_timeout_s": 2.0,
            "flush_interval_s": 0.05,
            "events_path": str(tmp / "events.jsonl"),
            "savings_path": str(tmp / "savings.jsonl"),
            "publish_dir": str(tmp / "published"),
            **settings,
        },
        "route": [
            {
                "model": "chat",
                "tier": [{"base_url": up.base_url, "model": m, "api_key_env": "TIER_KEY"} for m in models],
            }
        ],
    }
    with start_router(parse_routes(raw), env=ENV) as running:
        yield running


def client(r: RunningRouter) -> openai.OpenAI:
    return openai.OpenAI(base_url=r.base_url, api_key="client-key", max_retries=0, timeout=20)


def stream_text(r: RunningRouter) -> str:
    stream = client(r).chat.completions.create(model="chat", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
    return "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)


def reasons(tmp: Path) -> list[tuple[int, str]]:
    return [(e.tier, e.reason) for e in read_route_events(tmp / "events.jsonl")]


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
@pytest.mark.parametrize(
    ("tier1", "reason"),
    [
        (Script("stall_after_headers", text="TIER ONE", delay_s=5), "first_chunk_timeout"),
        (Script("die_before_content", text="TIER ONE"), "stream_error_before_commit"),
        (Script("http_error", status=503), "http_503"),
    ],
    ids=["stall-after-headers", "die-before-content", "503-before-stream"],
)
def test_failure_before_the_first_chunk_is_invisible(tmp_path: Path, tier1: Script, reason: str) -> None:
    with FakeUpstream({"t1": tier1, "t2": Script("ok", text="Tier two answers in full")}) as up:
        with router_for(up, tmp_path) as r:
            started = time.monotonic()
            text = stream_text(r)
            elapsed = time.monotonic() - started
        assert text == "Tier two answers in full"
        assert "TIER ONE" not in text
        assert len(up.for_model("t1")) == 1 and len(up.for_model("t2")) == 1
        assert elapsed < 0.5 + 1.5  # one budget at most, not the upstream's 5 s stall
    assert reasons(tmp_path) == [(1, reason)]


def test_death_after_the_first_chunk_shows_partial_text_and_a_clear_error(tmp_path: Path) -> None:
    seen: list[str] = []
    with FakeUpstream(
        {"t1": Script("die_after_first", text="Partial from one"), "t2": Script("ok", text="TWO")}
    ) as up:
        with router_for(up, tmp_path) as r:
            stream = client(r).chat.completions.create(model="chat", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
            with pytest.raises(openai.APIError) as info:
                for ch in stream:
                    seen.append(ch.choices[0].delta.content or "" if ch.choices else "")
        assert "".join(seen) == "Partial "
        assert "incomplete" in str(info.value.message)
        assert up.for_model("t2") == []  # never a second provider's text
    assert reasons(tmp_path) == [(1, "stream_error_after_commit")]


def test_silence_after_the_commit_ends_the_stream_with_a_timeout_error(tmp_path: Path) -> None:
    scripts = {
        "t1": Script("stall_after_first", text="Slow start", delay_s=5),
        "t2": Script("ok", text="TWO"),
    }
    seen: list[str] = []
    with FakeUpstream(scripts) as up, router_for(up, tmp_path, idle_timeout_s=0.5) as r:
        stream = client(r).chat.completions.create(model="chat", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        with pytest.raises(openai.APIError) as info:
            for ch in stream:
                seen.append(ch.choices[0].delta.content or "" if ch.choices else "")
        assert up.for_model("t2") == []
    body: dict[str, Any] = info.value.body  # type: ignore[assignment]
    assert "".join(seen) == "Slow " and body["code"] == "upstream_timeout" and body["metadata"]["code"] == 504
    assert reasons(tmp_path) == [(1, "idle_timeout_after_commit")]


def test_a_429_moves_on_and_cools_the_tier_down_for_retry_after(tmp_path: Path) -> None:
    scripts = {"t1": Script("http_error", status=429, retry_after="1"), "t2": Script("ok", text="from two")}
    with FakeUpstream(scripts) as up:
        with router_for(up, tmp_path) as r:
            assert stream_text(r) == "from two"
            assert stream_text(r) == "from two"
            assert len(up.for_model("t1")) == 1  # skipped while cooling
            up.scripts["t1"] = Script("ok", text="from one")
            time.sleep(1.1)
            assert stream_text(r) == "from one"  # back in first place once the cooldown ended
        assert len(up.for_model("t2")) == 2
    assert reasons(tmp_path) == [(1, "http_429")]


def test_a_cooling_tier_is_still_the_last_resort(tmp_path: Path) -> None:
    scripts = {
        "t1": Script("http_error", status=429, retry_after="30"),
        "t2": Script("http_error", status=502),
    }
    with FakeUpstream(scripts) as up:
        with router_for(up, tmp_path) as r:
            with pytest.raises(openai.APIStatusError) as first:
                stream_text(r)
            up.scripts["t1"] = Script("ok", text="one again")
            assert stream_text(r) == "one again"  # t2 tried first, then the cooling t1 as last resort
        assert first.value.status_code == 503 and "tier 1: http_429" in first.value.message
        assert [rq.model for rq in up.requests] == ["t1", "t2", "t2", "t1"]


def test_tier_order_is_kept_when_a_lower_tier_is_faster(tmp_path: Path) -> None:
    scripts = {"t1": Script("slow_first", text="primary", delay_s=0.25), "t2": Script("ok", text="fast")}
    with FakeUpstream(scripts) as up:
        with router_for(up, tmp_path, first_chunk_budget_s=2.0) as r:
            assert [stream_text(r) for _ in range(3)] == ["primary"] * 3
        assert up.for_model("t2") == []
    assert reasons(tmp_path) == []


def test_the_canary_ignore_list_is_merged_and_reread_on_change(tmp_path: Path) -> None:
    model = "meta-llama/llama-3.3-70b-instruct"
    published = tmp_path / "published"
    published.mkdir()
    path = published / f"{model_slug(model)}.json"
    raw = {
        "router": {
            "publish_dir": str(published),
            "events_path": str(tmp_path / "e.jsonl"),
            "savings_path": str(tmp_path / "s.jsonl"),
        }
    }
    with FakeUpstream({model: Script("ok")}) as up:
        raw["route"] = [
            {
                "model": "chat",
                "tier": [
                    {
                        "base_url": up.base_url,
                        "model": model,
                        "provider": {"ignore": ["together"], "order": ["a"]},
                    }
                ],
            }
        ]
        with start_router(parse_routes(raw), env={}) as r:
            c = client(r)
            c.chat.completions.create(model="chat", messages=MESSAGES, stream=True).close()  # type: ignore[arg-type]
            path.write_text(
                json.dumps({"model": model, "ignore": ["novita/fp8", "deepinfra/fp8"], "entries": []})
            )
            c.chat.completions.create(
                model="chat",
                messages=MESSAGES,  # type: ignore[arg-type]
                extra_body={"provider": {"ignore": ["mine"]}},
            )
        first, second = (rq.json["provider"] for rq in up.requests)
    assert first == {"ignore": ["together"], "order": ["a"]}
    assert second == {"ignore": ["mine", "together", "deepinfra/fp8", "novita/fp8"], "order": ["a"]}


def test_non_streaming_failover_and_client_errors_pass_through(tmp_path: Path) -> None:
    with FakeUpstream({"t1": Script("http_error", status=500), "t2": Script("ok", text="plain two")}) as up:
        with router_for(up, tmp_path) as r:
            reply = client(r).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
            assert reply.choices[0].message.content == "plain two"
            up.scripts["t1"] = Script("http_error", status=400)
            with pytest.raises(openai.BadRequestError):
                client(r).chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
            assert len(up.for_model("t2")) == 1  # a 400 is the request's fault: no failover
            with pytest.raises(openai.NotFoundError):
                client(r).chat.completions.create(model="nope", messages=MESSAGES)  # type: ignore[arg-type]
            models = client(r).models.list()
            assert [m.id for m in models.data] == ["chat"]


def _captured_body(tmp: Path, savers: list[str]) -> tuple[bytes, httpx.Headers]:
    with FakeUpstream({"t1": Script("ok")}) as up:
        with router_for(up, tmp, models=("t1",), savers=savers) as r:
            response = httpx.post(
                r.base_url + "/chat/completions",
                timeout=10,
                json={"model": "chat", "messages": MESSAGES, "temperature": 0.3},
            )
            assert response.status_code == 200
        return up.requests[0].body, response.headers


def test_reported_savings_equal_the_difference_measured_on_the_sent_payload(tmp_path: Path) -> None:
    plain, plain_headers = _captured_body(tmp_path / "a", [])
    saved, headers = _captured_body(tmp_path / "b", ["collapse_whitespace", "drop_duplicate_system"])
    assert plain != saved
    before, sent = count_body(plain), count_body(saved)
    assert before is not None and sent is not None and before > sent
    assert int(headers["x-canary-tokens-saved"]) == before - sent
    assert int(headers["x-canary-tokens-sent"]) == sent
    assert plain_headers["x-canary-tokens-saved"] == "0"
    record = json.loads((tmp_path / "b" / "savings.jsonl").read_text().splitlines()[0])
    assert record["tokens_saved"] == before - sent and record["billed_prompt_tokens"] == 42


def _explode(messages: list[dict[str, Any]], ctx: savings.SaverContext) -> list[dict[str, Any]]:
    raise ValueError("saver bug")


def test_a_failing_saver_leaves_the_request_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(savings.SAVERS, "explode", _explode)
    plain, _ = _captured_body(tmp_path / "a", [])
    failed, headers = _captured_body(tmp_path / "b", ["collapse_whitespace", "explode"])
    assert failed == plain
    assert headers["x-canary-tokens-saved"] == "0" and headers["x-canary-savers-failed"] == "explode"


def test_a_client_key_route_never_records_the_key(tmp_path: Path) -> None:
    import hashlib

    secret = "sk-client-very-secret"
    with FakeUpstream({"t1": Script("http_error", status=503), "t2": Script("ok", text="keyed")}) as up:
        raw = {
            "router": {
                "events_path": str(tmp_path / "events.jsonl"),
                "savings_path": str(tmp_path / "s.jsonl"),
                "flush_interval_s": 0.05,
            },
            "route": [
                {
                    "api_key_sha256": hashlib.sha256(secret.encode()).hexdigest(),
                    "tier": [
                        {"base_url": up.base_url, "model": m, "api_key_env": "TIER_KEY"} for m in ("t1", "t2")
                    ],
                }
            ],
        }
        with start_router(parse_routes(raw), env=ENV) as r:
            c = openai.OpenAI(base_url=r.base_url, api_key=secret, max_retries=0)
            reply = c.chat.completions.create(model="anything", messages=MESSAGES)  # type: ignore[arg-type]
        assert reply.choices[0].message.content == "keyed"
        assert up.requests[0].headers["authorization"] == "Bearer sk-or-v1-tier-secret"
    text = (tmp_path / "events.jsonl").read_text() + (tmp_path / "s.jsonl").read_text()
    assert secret not in text and ENV["TIER_KEY"] not in text and key_id(secret) in text
