"""The shipped alert rules (ops/prometheus/canary-rules.yml) are valid and behave as their unit tests say:
`promtool check rules` and `promtool test rules` (a case per alert: the exporter down or absent, the dead-man, a
model that never completed, a blind model, crashed rounds, refused alerts, the router's all-tiers-failed share,
failures after commit, first-chunk p95 and a stale ignore list...); and `promtool check metrics` accepts the
real exposition of a `canary demo` database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.prometheus import RULES_DIR, require_binary

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("args", "expected"), [
    (["check", "rules", "canary-rules.yml"], "SUCCESS: 22 rules found"),
    (["test", "rules", "canary-rules.test.yml"], "SUCCESS"),
    (["check", "rules", "canary-live-rules.yml"], "SUCCESS: 5 rules found"),  # tests/.../test_prometheus_live_rules.py
    (["test", "rules", "canary-live-rules.test.yml"], "SUCCESS"),
], ids=["check", "unit-tests", "check-live", "unit-tests-live"])
def test_promtool_accepts_the_rules_and_their_unit_tests_pass(args: list[str], expected: str) -> None:
    promtool = require_binary("promtool")
    out = subprocess.run([promtool, *args], cwd=RULES_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert expected in out.stdout


def test_every_alert_has_a_unit_test() -> None:
    import yaml

    rules = yaml.safe_load((RULES_DIR / "canary-rules.yml").read_text(encoding="utf-8"))
    tests = yaml.safe_load((RULES_DIR / "canary-rules.test.yml").read_text(encoding="utf-8"))
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    tested = {a["alertname"] for t in tests["tests"] for a in t.get("alert_rule_test", []) if a.get("exp_alerts")}
    assert alerts == tested


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_promtool_accepts_the_exposition_of_a_demo_database(tmp_path: Path) -> None:
    """`canary demo --days 0.05` (two rounds of the demo's 15-endpoint faulty fleet), then `canary metrics --once`:
    `promtool check metrics` says nothing (no error, no lint warning)."""
    promtool = require_binary("promtool")
    canary = str(Path(sys.executable).with_name("canary"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "CANARY_"))}
    demo = subprocess.run([canary, "demo", "--days", "0.05", "--db", "d.duckdb"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=280)
    assert demo.returncode == 0, demo.stderr[-3000:]
    scrape = subprocess.run([canary, "metrics", "--once", "--db", "d.duckdb"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert scrape.returncode == 0, scrape.stderr
    assert "canary_probe_outcomes_total{" in scrape.stdout and 'provider_tag="' in scrape.stdout
    out = subprocess.run([promtool, "check", "metrics"], input=scrape.stdout, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and not (out.stdout + out.stderr).strip(), out.stdout + out.stderr
