"""The shipped alert rules (ops/prometheus/canary-rules.yml) are valid and behave as their unit tests say:
`promtool check rules` and `promtool test rules` (the dead-man, a suspension, the capacity floor, a weak refusal
probe, spend above budget, alerts stuck in the outbox, the exporter down)."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.prometheus import RULES_DIR, require_binary

pytestmark = pytest.mark.integration


def test_rules_file_is_valid() -> None:
    promtool = require_binary("promtool")
    out = subprocess.run([promtool, "check", "rules", "canary-rules.yml"], cwd=RULES_DIR, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 9 rules found" in out.stdout


def test_rules_pass_their_unit_tests() -> None:
    promtool = require_binary("promtool")
    out = subprocess.run([promtool, "test", "rules", "canary-rules.test.yml"], cwd=RULES_DIR, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_every_alert_has_a_unit_test() -> None:
    import yaml

    rules = yaml.safe_load((RULES_DIR / "canary-rules.yml").read_text(encoding="utf-8"))
    tests = yaml.safe_load((RULES_DIR / "canary-rules.test.yml").read_text(encoding="utf-8"))
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    tested = {a["alertname"] for t in tests["tests"] for a in t.get("alert_rule_test", []) if a.get("exp_alerts")}
    assert alerts == tested
