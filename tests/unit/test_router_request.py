"""Reading a client's request (provider_canary/router/request.py): never a traceback for anything a client sends."""

from __future__ import annotations

import json

import pytest

from provider_canary.router.request import Prepared, Refusal, prepare
from provider_canary.router.routes_loading import parse_routes

pytestmark = pytest.mark.unit

ROUTES = parse_routes({"route": [{"model": "chat", "tier": [{"base_url": "http://a", "model": "m"}]}]})


@pytest.mark.parametrize(("raw", "status", "reason"), [
    (b"[" * 100_000 + b"]" * 100_000, 400, "too_deep"),  # issue 29: answered 500 on main
    (b'{"model": "chat", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400, "too_deep"),
    (b"{not json", 400, "not_json"),
    (b"\xff\xfe", 400, "not_json"),
    (b"[1, 2]", 400, "not_object"),
    (b'{"model": "other"}', 404, "no_route"),
])
def test_bad_bodies_are_refused_in_one_line(raw: bytes, status: int, reason: str) -> None:
    refused = prepare(raw, ROUTES, None)
    assert isinstance(refused, Refusal) and (refused.status, refused.reason) == (status, reason)
    assert "\n" not in refused.message


def test_a_request_keeps_what_the_judge_needs() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    body = {"model": "chat", "stream": True, "messages": [{"role": "user", "content": "hi"}], "tools": tools,
            "response_format": {"type": "json_object"}}
    got = prepare(json.dumps(body).encode(), ROUTES, None)
    assert isinstance(got, Prepared) and got.stream and got.tools == tools
    assert got.response_format == {"type": "json_object"} and got.route.key == "model:chat"
