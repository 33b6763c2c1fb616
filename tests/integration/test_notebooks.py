"""Every notebook runs top to bottom on a real simulated history, and every plot cell draws a real image.

The history (`shared_history`) is built once per session by the real round flow (provider_canary/demo/history.py) and is
shared with tests/integration/test_at.py. Half a day (24 rounds) covers what the notebooks and `canary at`
need: nebius/fp8's first flapping spell (02-04 UTC), the default incidents, suspensions that expire on the
short ladder, and the operational exclusions added, expired and removed.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

# A pipelined history takes both cores while it is built, and its verdicts rest on TTFT margins that a busy
# machine would eat: scripts/test runs these tests alone, with the timing tests.
pytestmark = [pytest.mark.e2e, pytest.mark.timing]  # one process runs this file and test_at.py (conftest)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
HISTORY_DAYS = 0.5
#: A plot cell draws its figure with the notebooks' `show(fig)` helper at the start of a line.
PLOT_CALL = re.compile(r"^show\(fig\)", re.MULTILINE)
MODEL = "meta-llama/llama-3.3-70b-instruct"


@dataclass(frozen=True)
class SharedHistory:
    db: str
    config: str
    build_s: float


def shared_history(tmp_path_factory: pytest.TempPathFactory) -> SharedHistory:
    """Build the session's history once (a marker file makes every later caller reuse it)."""
    base = tmp_path_factory.getbasetemp() / "canary-history"
    marker = base / "built.json"
    if marker.exists():
        return SharedHistory(**json.loads(marker.read_text()))
    from provider_canary.demo.history import build_history

    base.mkdir(exist_ok=True)
    result = build_history(days=HISTORY_DAYS, db_path=str(base / "history.duckdb"), progress=False)
    shared = SharedHistory(result.db_path, result.config_path, round(result.wall_s, 1))
    marker.write_text(json.dumps(shared.__dict__))
    return shared


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> SharedHistory:
    return shared_history(tmp_path_factory)


def _image_outputs(cell: dict) -> int:
    return sum(1 for o in cell.get("outputs", []) if "image/png" in o.get("data", {}))


@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs_top_to_bottom(
    name: str, history: SharedHistory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("CANARY_DB", history.db)  # the kernel inherits this process's environment
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    plot_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and PLOT_CALL.search(c.source)]
    nb.cells.insert(0, nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"))
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=240,
        allow_errors=False,  # any cell error raises CellExecutionError and fails the test
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    t0 = time.monotonic()
    client.execute()
    print(f"{name}: executed in {time.monotonic() - t0:.1f} s (history built in {history.build_s} s)")

    kernel_python = "".join(o.get("text", "") for o in nb.cells[0].outputs).strip()
    assert Path(kernel_python).resolve() == Path(sys.executable).resolve(), (
        f"the kernel ran {kernel_python}, not this venv's {sys.executable}"
    )
    assert plot_cells, f"{name} has no plot cell"
    for i in plot_cells:
        cell = nb.cells[i + 1]  # shifted by the inserted cell
        assert _image_outputs(cell) >= 1, f"{name}: plot cell {i} produced no image/png:\n{cell.source[:200]}"
        png = next(o["data"]["image/png"] for o in cell.outputs if "image/png" in o.get("data", {}))
        assert len(png) > 2000, f"{name}: plot cell {i} produced a suspiciously small image"


def test_notebooks_read_the_snapshot_not_the_live_file(history: SharedHistory) -> None:
    """Each notebook opens the analysts' snapshot and takes its path from CANARY_DB."""
    import nbformat

    for path in NOTEBOOKS.glob("*.ipynb"):
        source = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        assert 'os.environ.get("CANARY_DB", "demo.duckdb")' in source, path.name
        assert "open_snapshot(DB)" in source, path.name
        assert "duckdb.connect(" not in source, path.name
    assert os.path.exists(history.db)
