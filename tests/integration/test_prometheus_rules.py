"""The shipped alert rules (ops/prometheus/canary-rules.yml) are valid and behave as their unit tests say:
`promtool check rules` and `promtool test rules` (the dead-man, a suspension, the capacity floor, a weak refusal
probe, spend above budget, alerts stuck in the outbox, the exporter down)."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.prometheus import RULES_DIR, require_binary

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("args", "expected"), [
    (["check", "rules", "canary-rules.yml"], "SUCCESS: 9 rules found"),
    (["test", "rules", "canary-rules.test.yml"], "SUCCESS"),
], ids=["check", "unit-tests"])
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
