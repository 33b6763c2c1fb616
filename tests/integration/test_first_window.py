"""tasks/round/first_window.py on a real DuckDB file: rounds of one process asking for their first window while the
store is busy are answered in one window (not one each, one after another), each with its own prior and its own
`running` row; one round's refusal (another run holds its id) is its own."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.plan import make_round_id
from tasks.core.types import Mode, RoundInfo
from tasks.errors import RoundIdTaken
from tasks.ignore_list.variable_sync import UNREACHABLE
from tasks.round.first_window import FirstWindow, _turns, first_window
from tasks.store.connection import HELD_S
from tasks.store.settlement import mark_running
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.integration

T0 = datetime(2026, 7, 1, 9, 30, tzinfo=UTC)
MODELS = [f"acme/model-{i}" for i in range(6)]


def test_rounds_waiting_for_a_busy_store_share_one_window(tmp_path: Path) -> None:
    db = str(tmp_path / "canary.duckdb")
    cfg = CanaryConfig(db_path=db, models=tuple(MODELS), exclusions_file=NO_EXCLUSIONS)
    taken = RoundInfo(make_round_id(MODELS[5], T0), MODELS[5], T0, Mode.OBSERVE, run_id="another-run")
    with store.open_store(db) as con:
        mark_running(con, taken, started_at=T0)  # another run's round holds model 5's id

    asks = [FirstWindow(cfg, m, make_round_id(m, T0), T0, "this-run", UNREACHABLE) for m in MODELS]
    errors: dict[str, BaseException] = {}

    def ask_for(a: FirstWindow) -> None:
        try:
            first_window(a, lock_timeout_s=30)
        except BaseException as exc:  # noqa: BLE001 - kept for the assertion
            errors[a.model] = exc

    threads = [threading.Thread(target=ask_for, args=(a,)) for a in asks]
    with store.open_store(db, snapshot=False):  # the store is busy while every round asks
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while len(_turns(db).waiting) < len(asks) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(_turns(db).waiting) == len(asks)
        windows_before = len([h for h in HELD_S if not h[1]])
    for t in threads:
        t.join(30)

    assert len([h for h in HELD_S if not h[1]]) - windows_before == 2  # this test's own, and one for all six
    assert set(errors) == {MODELS[5]} and isinstance(errors[MODELS[5]], RoundIdTaken)
    assert [a.prior.model if a.prior else None for a in asks[:5]] == MODELS[:5]
    with store.open_store(db, read_only=True) as con:
        rows = con.execute("SELECT model, status, run_id FROM rounds ORDER BY model").fetchall()
    assert rows == [(m, "running", "this-run") for m in MODELS[:5]] + [(MODELS[5], "running", "another-run")]
