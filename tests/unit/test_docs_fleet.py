"""docs/operations.md "A fleet of routers" says what the code reads: its canary.toml and routes.toml snippets load
as written (the live source through Prometheus; the lists over HTTP, no database), and its Prometheus config
scrapes the routers and the exporter (promtool checks it: tests/integration/test_prometheus_live_rules.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from provider_canary.router.routes_loading import parse_routes
from tasks.config.loading import config_from_mapping
from tests.support.fleet_docs import fleet_snippet

pytestmark = pytest.mark.unit


def test_the_canary_toml_of_a_fleet_reads_the_live_evidence_from_prometheus() -> None:
    cfg = config_from_mapping(tomllib.loads(fleet_snippet("canary.toml")))
    assert (cfg.live_source, cfg.prometheus_url) == ("prometheus", "http://prometheus.internal:9090")


def test_the_routes_toml_of_a_fleet_polls_the_lists_and_writes_no_database(tmp_path: Path) -> None:
    routes = parse_routes(tomllib.loads(fleet_snippet("routes.toml")), base_dir=tmp_path)
    s = routes.settings
    assert (s.lists_url, s.lists_poll_s, s.events_db) == ("http://canary-host:9464/lists", 5.0, None)
    assert s.publish_dir == str(tmp_path / "published")  # the copies: beside the routes file by default
