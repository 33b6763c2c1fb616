"""The router's secrets stay its own (issue 40 item 7): an upstream that echoes the Authorization it received puts
the tier key into its answer, streamed (split across two reads) and not, and into an error passed to the client;
the client never sees the key in any form the canary masks. A base_url with a query is refused at load
(tests/unit/test_router_routes.py)."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import openai
import pytest

from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import start_router
from tests.support.wire_upstream import Script, WireUpstream

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

KEY = "sk-or-v1-" + "5b8e2d4f6a1c3e70" * 4
MESSAGES = [{"role": "user", "content": "What did I send you?"}]


def forms_of(key: str) -> list[bytes]:
    raw = key.encode()
    return [raw, raw[:20], raw[-16:], base64.b64encode(raw), base64.b64encode(b"router:" + raw)[12:40]]


def test_an_echoed_tier_key_never_reaches_the_client(tmp_path: Path) -> None:
    with WireUpstream({"t1": Script("echo_auth"), "t2": Script("echo_auth_error")}) as up:
        raw = {"router": {"events_path": str(tmp_path / "e.jsonl"), "savings_path": str(tmp_path / "s.jsonl"),
                          "publish_dir": str(tmp_path / "published")},
               "route": [{"model": m, "tier": [{"base_url": up.base_url, "model": t, "api_key_env": "TIER_KEY"}]}
                         for m, t in (("chat", "t1"), ("bad", "t2"))]}
        with start_router(parse_routes(raw), env={"TIER_KEY": KEY}) as r:
            c = openai.OpenAI(base_url=r.base_url, api_key="client-key", max_retries=0, timeout=20)
            chunks = c.chat.completions.create(model="chat", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
            streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
            whole = c.chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
            raw_stream = httpx.post(r.base_url + "/chat/completions", timeout=10,
                                    json={"model": "chat", "messages": MESSAGES, "stream": True})
            with pytest.raises(openai.BadRequestError) as refused:
                c.chat.completions.create(model="bad", messages=MESSAGES)  # type: ignore[arg-type]
        assert up.requests[0].headers["authorization"] == f"Bearer {KEY}"  # the upstream did get the key
    text = whole.parse().choices[0].message.content or ""
    assert streamed.startswith("You sent me: Bearer ***") and "As Basic: " in streamed
    assert text == "You sent me: Bearer ***" and whole.headers["x-generation-id"] == "gen-***"
    seen = [streamed.encode(), text.encode(), raw_stream.content, whole.http_response.content,
            refused.value.response.content, str(dict(whole.headers)).encode()]
    for form in forms_of(KEY):
        assert not any(form in blob for blob in seen), form
    assert b"Bearer ***" in refused.value.response.content
