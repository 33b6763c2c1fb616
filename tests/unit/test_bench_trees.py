"""benchmarks/bench_catalog.py refuses a baseline tree that would run another checkout's code: a `.venv` symlinked or
copied from this checkout imports this checkout's `tasks` through its editable install (found out the hard way: three
"comparisons" of one tree with itself, 0.92x-1.21x apart, the benchmark's noise)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_catalog import ROOT, runs_its_own_code  # noqa: E402

pytestmark = pytest.mark.unit


def test_this_checkout_runs_its_own_code() -> None:
    assert runs_its_own_code(ROOT) is None


def test_a_tree_borrowing_this_checkouts_venv_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "__init__.py").write_text("")
    os.symlink(ROOT / ".venv", tmp_path / ".venv")  # this checkout's venv: its editable install's tasks
    why = runs_its_own_code(tmp_path)
    assert why is not None and f"imports tasks from {ROOT.resolve()}/tasks" in why and "its own .venv" in why
