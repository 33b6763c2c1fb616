"""The router's own errors in OpenAI's shape (provider_canary/router/records.py `error_body`), and how a walk where
every tier failed ends: 429 when every tier asked answered 429, else 503; Retry-After capped for clients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import provider_canary.router.reasons as r
from provider_canary.router import records
from provider_canary.router.records import TierFailed, walk_failed
from provider_canary.router.routes import Route, Tier

pytestmark = pytest.mark.unit

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "openai" / "errors.json").read_text())
ROUTE = Route("model:chat", (Tier("http://a/api/v1", "m1"), Tier("http://b/api/v1", "m2")), model="chat")


def shape(body: dict[str, Any]) -> dict[str, type]:
    return {k: type(v) for k, v in body["error"].items() if k != "metadata"}


@pytest.mark.parametrize("status", [400, 401, 404, 405, 413, 429, 500, 502, 503, 504, 418])
def test_every_router_error_has_openais_shape_with_a_string_code(status: int) -> None:
    body = records.error_body(status, "something went wrong")
    error = body["error"]
    assert set(FIXTURE["schema"]["required"]) <= set(error)
    assert isinstance(error["code"], str) and error["code"] and isinstance(error["type"], str)
    assert error["param"] is None and error["metadata"]["code"] == status  # OpenRouter's number, kept


@pytest.mark.parametrize("real", FIXTURE["bodies"], ids=[str(b["status"]) for b in FIXTURE["bodies"]])
def test_the_router_says_what_openai_says_for_the_same_status(real: dict[str, Any]) -> None:
    ours = records.error_body(real["status"], "x")["error"]
    theirs = real["body"]["error"]
    assert ours["type"] == theirs["type"]
    assert theirs["code"] is None or ours["code"] == theirs["code"]
    assert set(theirs) <= set(ours)


def test_metadata_carries_what_the_caller_says_beside_the_number() -> None:
    error = records.error_body(503, "all failed", route="model:chat", attempts=[])["error"]
    assert error["metadata"] == {"code": 503, "route": "model:chat", "attempts": []}
    assert records.error_body(404, "no", code="model_not_found", param="model")["error"]["param"] == "model"


def failed(*items: tuple[int, r.FailoverReason, float | None]) -> list[TierFailed]:
    return [TierFailed(n, reason, wait) for n, reason, wait in items]


def test_every_tier_answering_429_is_a_429_with_the_smallest_retry_after() -> None:
    status, body, headers = walk_failed(ROUTE, failed((1, r.http(429), 30.0), (2, r.http(429), 7.2)), None)
    assert status == 429 and headers == {"retry-after": "8"}
    assert body["error"]["code"] == "rate_limit_exceeded" and body["error"]["type"] == "requests"
    assert body["error"]["metadata"]["attempts"] == [{"tier": 1, "reason": "http_429"},
                                                     {"tier": 2, "reason": "http_429"}]


def test_a_429_said_inside_a_200_or_an_error_chunk_counts_as_429_and_a_skip_asked_nothing() -> None:
    skip = r.fixed(r.Cause.CIRCUIT_OPEN)
    chunk = r.fixed(r.Cause.ERROR_CHUNK_BEFORE_COMMIT, 429)
    assert walk_failed(ROUTE, failed((1, skip, None), (2, chunk, None)), None)[0] == 429
    assert walk_failed(ROUTE, failed((1, r.error_in_200(429), None)), None)[0] == 429


@pytest.mark.parametrize(("items", "status"), [
    ([(1, r.http(429), 5.0), (2, r.http(503), None)], 503),
    ([(1, r.fixed(r.Cause.CIRCUIT_OPEN), None), (2, r.fixed(r.Cause.PINNED_EXCLUDED), None)], 503),
    ([(1, r.fixed(r.Cause.FIRST_CHUNK_TIMEOUT), None)], 503),
])
def test_anything_else_is_the_routers_503(items: list[tuple[int, r.FailoverReason, float | None]],
                                          status: int) -> None:
    code, body, _ = walk_failed(ROUTE, failed(*items), None)
    assert code == status and body["error"]["code"] == "all_tiers_failed" and body["error"]["type"] == "server_error"


@pytest.mark.parametrize(("seconds", "header"), [
    (None, None), (0.0, None), (-3.0, None), (float("nan"), None), (0.2, "1"), (12.5, "13"), (60.0, "60"),
    (61.0, "60"), (300.0, "60"), (86400.0, "60"),
])
def test_a_client_is_never_told_to_wait_more_than_a_minute(seconds: float | None, header: str | None) -> None:
    assert records.retry_after_header(seconds).get("retry-after") == header
    _, _, headers = walk_failed(ROUTE, failed((1, r.http(429), seconds)), None)
    assert headers.get("retry-after") == header


def test_upstream_requests_ask_for_identity_encoding() -> None:
    headers = records.upstream_headers(ROUTE.tiers[0], "k", {}, stream=True)
    assert headers["accept-encoding"] == "identity"
