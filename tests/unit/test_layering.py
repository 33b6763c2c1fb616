"""The functional core stays pure: its modules import no Prefect, httpx, DuckDB or slack_sdk (AST walk)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
PURE = [
    "tasks/types.py",
    "tasks/config.py",
    "tasks/errors.py",
    "tasks/sse.py",
    "tasks/prompts.py",
    "tasks/plan.py",
    "tasks/rotation.py",
    "tasks/judge.py",
    "tasks/classify.py",
    "tasks/verdicts.py",
    "tasks/policy.py",
    "tasks/exclusions.py",
    "tasks/replay.py",
    "tasks/deadman.py",
    "tasks/langdetect.py",
    "tasks/probe_record.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tasks/contracts").glob("*.py")),
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tasks/render").glob("*.py")),
    "router/tiers.py",
    "router/stream.py",
    "router/savings.py",
]
FORBIDDEN = {"prefect", "httpx", "duckdb", "slack_sdk", "tasks.store", "tasks.round_steps", "tasks.alerts"}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_no_io_library(module: str) -> None:
    bad = {n for n in imported(ROOT / module) if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)}
    assert not bad, f"{module} imports {sorted(bad)}"


def test_the_walk_sees_imports() -> None:
    assert {"prefect", "httpx"} <= imported(ROOT / "tasks/round_steps.py")
