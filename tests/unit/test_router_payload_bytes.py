"""The bytes the router sends upstream (provider_canary/router/payload.py), exactly: compact UTF-8 JSON, the savers'
messages in place of the client's, no `provider` key when nothing is left to say, and ignore lists of strings only."""

from __future__ import annotations

import json

import pytest

from provider_canary.router.payload import build_body, merge_ignore, merge_provider, serialize
from provider_canary.router.routes import Tier

pytestmark = pytest.mark.unit


def test_the_body_is_compact_utf8_json() -> None:
    assert serialize({"a": "é ✓", "b": [1, {"c": None}]}) == '{"a":"é ✓","b":[1,{"c":null}]}'.encode()


def test_the_savers_messages_replace_the_clients() -> None:
    client = {"model": "chat", "messages": [{"role": "user", "content": "long " * 10}], "stream": True}
    shorter = [{"role": "user", "content": "short"}]
    sent = json.loads(build_body(client, Tier("http://u", "m/x"), [], messages=shorter))
    assert sent == {"model": "m/x", "messages": shorter, "stream": True}
    assert json.loads(build_body(client, Tier("http://u", "m/x"), []))["messages"] == client["messages"]


def test_a_provider_object_left_empty_is_not_sent() -> None:
    sent = json.loads(build_body({"model": "chat", "messages": [], "provider": {}}, Tier("http://u", "m/x"), []))
    assert "provider" not in sent


def test_an_ignore_that_is_no_list_is_dropped_and_only_strings_are_kept() -> None:
    assert merge_provider({"ignore": "alpha", "order": ["beta"]}, {}, []) == {"order": ["beta"]}
    assert merge_provider({"ignore": "alpha"}, {}, []) is None
    assert merge_ignore(["a", 5, None, "a"], ["b", "a"]) == ["a", "b"]
