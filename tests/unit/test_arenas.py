"""The allocators the canary's processes run on (tasks/runtime/arenas.py, issue 32): glibc's arenas capped, Arrow on the
system allocator (its mimalloc pool kept a heap per round thread), the operator's values winning."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tasks.runtime import arenas

ROOT = Path(__file__).resolve().parents[2]


def test_a_child_environment_gets_both_unless_the_operator_set_them() -> None:
    assert arenas.capped_env({"PATH": "/bin"}) == {"PATH": "/bin", "MALLOC_ARENA_MAX": "2",
                                                   "ARROW_DEFAULT_MEMORY_POOL": "system"}
    mine = {"MALLOC_ARENA_MAX": "4", "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}
    assert arenas.capped_env(mine) == mine


def test_pyarrow_loaded_first_gets_the_system_pool_as_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen: list[str] = []
    fake = types.SimpleNamespace(system_memory_pool=lambda: "system-pool", set_memory_pool=chosen.append)
    monkeypatch.setitem(sys.modules, "pyarrow", fake)
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    arenas._arrow_on_system_pool()
    assert chosen == ["system-pool"] and os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"


def test_the_operators_arrow_pool_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen: list[str] = []
    fake = types.SimpleNamespace(system_memory_pool=lambda: "system-pool", set_memory_pool=chosen.append)
    monkeypatch.setitem(sys.modules, "pyarrow", fake)
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    arenas._arrow_on_system_pool()
    assert chosen == [] and os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "mimalloc"


def test_a_process_that_caps_before_loading_pandas_allocates_arrow_memory_with_malloc() -> None:
    code = ("from tasks.runtime.arenas import cap_arenas; cap_arenas(); import pandas as pd, pyarrow as pa; "
            "pd.DataFrame({'s': ['a', 'b'] * 100}).groupby('s').size(); "
            "print(pa.default_memory_pool().backend_name, pa.mimalloc_memory_pool().max_memory())")
    env = {k: v for k, v in os.environ.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_ARENA_MAX")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split() == ["system", "0"]
