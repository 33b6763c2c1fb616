"""Where Prefect has the mechanism the canary uses it (issue 41 item 4): slots come back through their leases and
a dead process's flow runs are marked Crashed by Prefect's zombie-run automation, so no code of the project writes
a concurrency limit's `active_slots` or sets a flow run's state (AST of every module, calls and keywords)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tasks", "flows", "cli", "router", "demo", "simulator")
#: Client calls that would do it by hand.
FORBIDDEN_CALLS = {"set_flow_run_state", "update_global_concurrency_limit", "set_task_run_state"}


def _offences(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in FORBIDDEN_CALLS:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {name}")
        found += [f"{path.relative_to(ROOT)}:{node.lineno} passes active_slots="
                  for kw in node.keywords if kw.arg == "active_slots"]
    return found


def test_no_module_writes_active_slots_or_forces_a_run_state() -> None:
    offences = [o for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py")) for o in _offences(path)]
    assert offences == []
