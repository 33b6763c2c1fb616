"""The routes file's schema (provider_canary/router/routes_schema.py), the one base-URL rule (tasks/core/urls.py) and
the one-line adapter for a nested file (tasks/config/schema_lines.py)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from provider_canary.router.routes import RouterSettings, Tier
from provider_canary.router.routes_loading import parse_client, parse_routes
from provider_canary.router.routes_schema import RouterTable, TierTable
from tasks.core.urls import UrlFault, url_fault
from tasks.errors import RoutesError

pytestmark = pytest.mark.unit
TIER = {"base_url": "http://a/v1", "model": "m"}


def told(raw: dict[str, Any]) -> str:
    with pytest.raises(RoutesError) as info:
        parse_routes(raw)
    return str(info.value)


def test_the_tables_hold_every_knob_with_the_records_default() -> None:
    assert set(RouterTable.model_fields) == {f.name for f in fields(RouterSettings)}
    assert RouterTable().settings() == RouterSettings()
    assert set(TierTable.model_fields) == {f.name for f in fields(Tier)}


@pytest.mark.parametrize(("url", "appended", "fault"), [
    ("https://or.example/api/v1", True, None),
    ("http://127.0.0.1:9090/prom/", True, None),
    ("ftp://or.example", False, UrlFault.NOT_HTTP),
    ("https://", False, UrlFault.NOT_HTTP),
    ("http://[::1", False, UrlFault.NOT_HTTP),
    (9464, False, UrlFault.NOT_HTTP),
    ("https://u:pw@or.example", False, UrlFault.CREDENTIALS),
    ("https://or.example/v1?key=x", False, None),  # canary.toml's base_url: no path is appended to a query
    ("https://or.example/v1?key=x", True, UrlFault.QUERY),
    ("https://or.example/v1#x", True, UrlFault.QUERY),
    ("https://or.example/v1?", True, UrlFault.QUERY),
])
def test_one_base_url_rule(url: object, appended: bool, fault: UrlFault | None) -> None:
    assert url_fault(url, path_appended=appended) is fault


@pytest.mark.parametrize(("raw", "line"), [
    ({"router": 5, "route": [{"model": "c", "tier": [TIER]}]}, "routes: [router] must be a table (got 5)"),
    ({"route": [{"model": "c", "tier": [TIER, 7]}]}, "routes: route[0].tier[1] must be a table (got 7)"),
    ({"route": [{"model": "c", "tier": [{**TIER, "provider": {"ignore": "x"}}]}]},
     "routes: route[0].tier[0].provider.ignore must be a list of provider tags (got 'x')"),  # a validator's own text
    ({"route": [{"model": "c", "tier": [{"base_url": "http://a"}]}]},
     "routes: route[0].tier[0].model must be a model id (got None)"),  # a missing key
    ({"route": [{"model": "c", "tier": [{**TIER, "zz": 1, "aa": 2}]}]},
     "routes: route[0].tier[0]: unknown key 'aa' (known: api_key_env, base_url, canary_model, "),
    ({"router": {"max_connections": 0}, "route": [{"model": "c", "tier": [TIER]}]},
     "routes: router.max_connections must be an integer between 1 and 65536 (got 0)"),
])
def test_a_nested_key_is_named_where_it_sits(raw: dict[str, Any], line: str) -> None:
    assert told(raw).startswith(line)


def test_a_client_checked_alone_is_named_by_its_place_in_the_file() -> None:
    with pytest.raises(RoutesError, match=r"^routes: client\[3\]: unknown key 'key' "):
        parse_client({"name": "t", "key_sha256": "0" * 64, "key": "sk-x"}, 3)


@pytest.mark.parametrize(("raw", "needle"), [
    ({"client": [{"name": "team-a\n", "key_sha256": "0" * 64}]}, "client[0].name"),
    ({"client": [{"name": "t", "key_sha256": "0" * 64 + "\n"}]}, "client[0].key_sha256"),
    ({"route": [{"api_key_sha256": "0" * 64 + "\n", "tier": [TIER]}]}, "route[0].api_key_sha256"),
    ({"route": [{"model": "c", "tier": [{**TIER, "api_key_env": "OPENROUTER_API_KEY\n"}]}]}, "api_key_env"),
])
def test_a_trailing_newline_no_longer_slips_past_a_dollar(raw: dict[str, Any], needle: str) -> None:
    """Python's `$` matched before a final newline: a client name `team-a\\n` reached metric labels and logs."""
    raw = {"route": [{"model": "c", "tier": [TIER]}], **raw}
    assert needle in told(raw)


def test_a_nan_number_of_seconds_is_refused() -> None:
    """`nan < 0.001` is false: the old check let a NaN budget or cooldown through to the router's timers."""
    assert "router.cooldown_s must be a number >= 0.001 (got nan)" in told(
        {"router": {"cooldown_s": float("nan")}, "route": [{"model": "c", "tier": [TIER]}]})
