"""The live evidence's recording rules (ops/prometheus/canary-live-rules.yml) record the very sums the watcher
asks for (tasks/core/live_promql.py), so a dashboard and the canary read the same numbers; promtool checks them
and runs their unit tests (two replicas, one restarted) in test_prometheus_rules.py; and the docs' scrape config
for a fleet is valid."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tasks.core.live_promql import LABELS, ROUTERS, live_query
from tests.support.fleet_docs import fleet_snippet
from tests.support.prometheus import RULES_DIR, require_binary

pytestmark = pytest.mark.integration


def test_the_rules_record_the_watchers_own_queries_at_the_default_window() -> None:
    rules = yaml.safe_load((RULES_DIR / "canary-live-rules.yml").read_text(encoding="utf-8"))
    recorded = {r["record"]: " ".join(r["expr"].split()) for g in rules["groups"] for r in g["rules"]}
    for family in LABELS:
        name = f"canary:{family.removeprefix('canary_').removesuffix('_total')}:increase5m"
        assert recorded[name] == live_query(family, 300).removesuffix(" > 0").replace("[300s]", "[5m]")
    assert recorded["canary:router_live_replicas:count"] == ROUTERS


def test_the_fleet_scrape_config_of_the_docs_is_valid(tmp_path: Path) -> None:
    """docs/operations.md's prometheus.yml for N replicas, with the rule files where this checkout has them."""
    text = fleet_snippet("prometheus.yml").replace("/etc/prometheus/", f"{RULES_DIR}/")
    config = yaml.safe_load(text)
    assert {j["job_name"] for j in config["scrape_configs"]} == {"canary-router", "canary"}
    (tmp_path / "prometheus.yml").write_text(text, encoding="utf-8")
    out = subprocess.run([require_binary("promtool"), "check", "config", str(tmp_path / "prometheus.yml")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    # both rule files load from the docs' config (their rule counts: test_prometheus_rules.py)
    assert "SUCCESS: 2 rule files found" in out.stdout, out.stdout
    assert out.stdout.count("rules found") == 2 and "canary-live-rules.yml" in out.stdout, out.stdout
