"""The functional core stays pure: its modules import no Prefect, httpx, DuckDB or slack_sdk (AST walk)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
#: The pure core is a package: every module under tasks/core/, plus the router's pure modules.
PURE = [
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tasks/core").rglob("*.py")),
    "router/tiers.py",
    "router/stream.py",
    "router/stream_events.py",
    "router/savings.py",
]
FORBIDDEN = {"prefect", "httpx", "duckdb", "slack_sdk", "starlette", "uvicorn", "typer"}
#: Besides each other, core modules may import these two shell-free modules of tasks/ (the config record and
#: the operator's errors); anything else under tasks/ is the imperative shell.
ALLOWED_TASKS = {"tasks.config", "tasks.errors"}


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


@pytest.mark.parametrize("module", [m for m in PURE if m.startswith("tasks/core/")])
def test_core_module_imports_nothing_of_the_shell(module: str) -> None:
    shell = {n for n in imported(ROOT / module)
             if n.startswith("tasks.") and not n.startswith("tasks.core") and n not in ALLOWED_TASKS}
    assert not shell, f"{module} imports the shell: {sorted(shell)}"


def test_the_core_package_holds_the_pure_modules() -> None:
    """Every module the round settles with lives in the core package (a new pure module goes there too)."""
    for name in ("types", "settle", "policy", "verdicts", "judge", "exclusions", "replay", "classify"):
        assert (ROOT / "tasks/core" / f"{name}.py").is_file(), name
    assert (ROOT / "tasks/core/contracts/__init__.py").is_file()


def test_the_walk_sees_imports() -> None:
    assert {"prefect", "httpx"} <= imported(ROOT / "tasks/round_steps.py")
