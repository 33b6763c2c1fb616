"""The operator's generated files stay true to the code (ops/build.py): the Grafana dashboard built with
grafana-foundation-sdk (ops/grafana/dashboard.py) and docs/operations.md's metric tables, alert table and
runbooks; every alert links to its runbook, and every dashboard table is an instant table query."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def _build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ops_build", REPO / "ops" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ops_build"] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_dashboard_and_docs_are_what_the_code_builds() -> None:
    for path, text in _build().built().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.relative_to(REPO)} is stale: run ops/build.py"


def test_every_alert_links_to_its_runbook_heading() -> None:
    build = _build()
    docs = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    rules = yaml.safe_load((REPO / "ops" / "prometheus" / "canary-rules.yml").read_text(encoding="utf-8"))
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    assert len(alerts) == 22
    for rule in alerts:
        url = rule["annotations"]["runbook_url"]
        assert url == "{{ $externalLabels.canary_runbooks }}docs/operations.md#" + build.anchor(rule["alert"])
        assert f"\n#### {rule['alert']}\n" in docs


def test_the_dashboard_tables_are_instant_table_queries_and_each_panel_has_one_unit() -> None:
    board = json.loads((REPO / "ops" / "grafana" / "canary-dashboard.json").read_text(encoding="utf-8"))
    panels = [p for p in board["panels"] if p["type"] != "row"]
    tables = [p for p in panels if p["type"] == "table"]
    assert len(tables) == 2
    for p in tables:
        assert [(t["instant"], t["range"], t["format"]) for t in p["targets"]] == [(True, False, "table")]
        organize = p["transformations"][0]
        assert organize["id"] == "organize" and organize["options"]["excludeByName"]["Time"] is True
    assert {p["type"] for p in panels} >= {"timeseries", "table", "status-history", "stat"}
    plotted = [p for p in panels if p["type"] != "status-history"]
    assert all(isinstance(p["fieldConfig"]["defaults"].get("unit"), str) for p in plotted)
    exprs = " ".join(t["expr"] for p in panels for t in p["targets"])
    assert "canary_router_" in exprs and "endpoint=" not in exprs and "{{endpoint}}" not in json.dumps(board)
