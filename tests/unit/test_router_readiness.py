"""Ready or not (provider_canary/router/readiness.py), a tier model's variant suffix and its list
(provider_canary/router/ignore.py), and the router's own saturation as a reason that blames no tier
(provider_canary/router/reasons.py, provider_canary/router/upstream.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from provider_canary.router import reasons
from provider_canary.router.ignore import ListStatus, base_model, ignore_path
from provider_canary.router.readiness import SinkState, not_ready
from provider_canary.router.reasons import Cause
from provider_canary.router.routes import DEFAULT_MAX_CONNECTIONS, Tier
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.upstream import _request_failure
from tasks.errors import RoutesError

pytestmark = pytest.mark.unit

FRESH = ListStatus("model:chat", 1, "m/a", "/p/m-a.json", True, 3, 10.0, False)


def test_ready_when_the_lists_are_there_and_fresh_and_no_sink_is_full() -> None:
    assert not_ready([FRESH], [SinkState("route-events", 9, 10, 5)], started=True) == []


def test_each_reason_is_named_with_what_it_is_about() -> None:
    missing = ListStatus("model:chat", 2, "m/b", "/p/m-b.json", False)
    stale = ListStatus("model:chat", 3, "m/c", "/p/m-c.json", True, 1, 7200.04, True)
    got = not_ready([FRESH, missing, stale], [SinkState("route-events", 10, 10, 1), SinkState("live", 0, 10, 0)],
                    started=False)
    assert [(r["reason"], r.get("tier"), r.get("sink")) for r in got] == [
        ("starting", None, None), ("list_missing", 2, None), ("list_stale", 3, None),
        ("sink_dropping", None, "route-events")]
    assert got[1]["path"] == "/p/m-b.json" and got[2]["age_s"] == 7200.0


@pytest.mark.parametrize(("model", "base"), [
    ("meta-llama/llama-3.3-70b-instruct:nitro", "meta-llama/llama-3.3-70b-instruct"),
    ("meta-llama/llama-3.3-70b-instruct:free", "meta-llama/llama-3.3-70b-instruct"),
    ("qwen/qwen3-coder:floor", "qwen/qwen3-coder"),
    ("meta-llama/llama-3.3-70b-instruct", "meta-llama/llama-3.3-70b-instruct"),
    ("plain:exacto", "plain"),
])
def test_a_variant_suffix_is_dropped_from_the_model_whose_list_is_read(model: str, base: str) -> None:
    assert base_model(model) == base
    tier = Tier("http://h/v1", model)
    assert ignore_path(tier, Path("/p")) == ignore_path(Tier("http://h/v1", base), Path("/p"))


def test_an_explicit_canary_model_is_read_as_written() -> None:
    tier = Tier("http://h/v1", "m/a:nitro", canary_model="m/a:free")
    assert ignore_path(tier, Path("/p")) == Path("/p/m-a-free.json")


def test_the_routers_own_saturation_blames_no_tier() -> None:
    overloaded = reasons.fixed(Cause.ROUTER_OVERLOADED)
    assert str(overloaded) == "router_overloaded"
    assert overloaded.live_outcome is None and not overloaded.cools_down and overloaded.is_routers_own
    assert not reasons.fixed(Cause.TIMEOUT).is_routers_own and reasons.fixed(Cause.TIMEOUT).cools_down
    assert _request_failure(httpx.PoolTimeout("pool"), 5.0).reason == overloaded
    assert _request_failure(httpx.ConnectTimeout("connect"), 5.0).reason == reasons.fixed(Cause.CONNECT)


def test_max_connections_has_todays_default_and_bounds() -> None:
    route = {"model": "chat", "tier": [{"base_url": "http://h/v1", "model": "m"}]}
    assert parse_routes({"route": [route]}).settings.max_connections == DEFAULT_MAX_CONNECTIONS == 256
    assert parse_routes({"route": [route], "router": {"max_connections": 8}}).settings.max_connections == 8
    with pytest.raises(RoutesError, match="router.max_connections must be an integer between 1 and 65536"):
        parse_routes({"route": [route], "router": {"max_connections": 0}})
