"""The `/readyz` 503 body (provider_canary/router/readiness.py) object by object, as an operator's monitor reads it:
each reason with every field that says what it is about (docs/operations.md, "the router is not ready")."""

from __future__ import annotations

import pytest

from provider_canary.router.ignore import ListStatus
from provider_canary.router.readiness import SinkState, not_ready

pytestmark = pytest.mark.unit


def test_each_reason_object_whole() -> None:
    missing = ListStatus("model:chat", 2, "m/b", "/p/m-b.json", False)
    stale = ListStatus("key:k1", 3, "m/c", "/p/m-c.json", True, 1, 7200.46, True)
    unknown_age = ListStatus("key:k2", 1, "m/d", "/p/m-d.json", True, 0, None, True)
    got = not_ready([missing, stale, unknown_age], [SinkState("route-events", 11, 10, 4)], started=False)
    assert got == [
        {"reason": "starting", "message": "the router's upstream client is not open yet"},
        {"reason": "list_missing", "route": "model:chat", "tier": 2, "model": "m/b", "path": "/p/m-b.json",
         "message": "the tier's canary ignore list does not exist"},
        {"reason": "list_stale", "route": "key:k1", "tier": 3, "model": "m/c", "path": "/p/m-c.json",
         "age_s": 7200.5, "message": "the tier's canary ignore list is older than two canary intervals"},
        {"reason": "list_stale", "route": "key:k2", "tier": 1, "model": "m/d", "path": "/p/m-d.json",
         "age_s": 0.0, "message": "the tier's canary ignore list is older than two canary intervals"},
        {"reason": "sink_dropping", "sink": "route-events", "pending": 11, "dropped": 4,
         "message": "the sink's buffer is full: every new record pushes out the oldest"},
    ]
    assert isinstance(got[2]["age_s"], float) and isinstance(got[3]["age_s"], float)


def test_a_sink_one_short_of_its_cap_is_not_dropping() -> None:
    assert not_ready([], [SinkState("live-requests", 9, 10, 0)], started=True) == []
    assert [r["reason"] for r in not_ready([], [SinkState("live-requests", 10, 10, 0)], started=True)] == [
        "sink_dropping"]
