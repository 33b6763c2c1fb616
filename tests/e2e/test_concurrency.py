"""Two rounds of the same model never overlap (tasks/orchestration/round_slots.py), under the shared Prefect test
harness.

Real flow rounds against the simulator: round A is slow (an endpoint's first token takes 2 s); round B of the
same model starts while A holds the slot. With a short wait B is skipped with a clear log line; with a long
wait B runs after A, and its probes start only after A's last probe ended (attempt times in DuckDB). A round killed
(SIGKILL) while it holds the slot leaves its lease in its journal: the next round releases that lease at once,
through Prefect (the lease is gone from the server), and runs.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.orchestration.round_slots import WAIT_S, RoundSkipped, limit_name, wait_seconds
from tasks.runtime.failpoints import ENV as FAILPOINTS_ENV
from tasks.spool.journal import JOURNAL_SUFFIX, spool_dir
from tests.support.rounds import round_overrides

MODEL = "acme/overlap-model"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _fleet(delay_s: float) -> Any:
    return parse_fleet(
        {
            "models": [
                {
                    "id": MODEL,
                    "endpoints": [
                        {"tag": "quick", "provider_name": "Quick"},
                        {
                            "tag": "slowpoke",
                            "provider_name": "Slowpoke",
                            "faults": [{"kind": "slow_first_token", "delay_s": delay_s, "keepalive_s": 0.5}],
                        },
                    ],
                }
            ]
        }
    )


FLEET = _fleet(2.0)
#: For the skip test the first round must outlast the second round's start-up even on a loaded machine.
LONG_FLEET = _fleet(8.0)


# --- pure parts ------------------------------------------------------------------------------------------
@pytest.mark.unit
def test_wait_seconds_reads_env_and_falls_back() -> None:
    assert wait_seconds({"CANARY_ROUND_WAIT_S": "2.5"}) == 2.5
    assert wait_seconds({"CANARY_ROUND_WAIT_S": "0"}) == 0.0
    for bad in ("", "soon", "-1", "nan?"):
        assert wait_seconds({"CANARY_ROUND_WAIT_S": bad}) == WAIT_S


# --- flows -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, sim: SimulatorHandle, tmp_path: Path) -> dict[str, Any]:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    return round_overrides(sim, tmp_path, MODEL, ttft_s=1, languages=["en"])


def _active_slots(model: str) -> int:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return int(client.read_global_concurrency_limit_by_name(limit_name(model)).active_slots)


class Runner(threading.Thread):
    """One round in a thread; keeps its summary or the exception it ended with."""

    def __init__(self, round_ts: datetime, overrides: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.round_ts, self.overrides = round_ts, overrides
        self.summary: dict[str, Any] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        from flows.round import canary_round

        try:
            self.summary = canary_round(model=MODEL, round_ts=self.round_ts, overrides=self.overrides)
        except BaseException as e:  # noqa: B036 (kept for the assertion)
            self.error = e


def _skipped(r: Runner) -> bool:
    """Skipped: RoundSkipped raised, or (once the flow turns it into a result) a summary saying so."""
    return isinstance(r.error, RoundSkipped) or bool(r.summary and r.summary.get("skipped"))


def _wait_until_held(model: str, first: Runner, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and first.is_alive():
        try:
            if _active_slots(model) >= 1:
                return
        except Exception:  # the limit is created by the first round: not there yet
            pass
        time.sleep(0.05)
    raise AssertionError(f"round A never held the slot (alive={first.is_alive()}, error={first.error!r})")


def _probe_window(db_path: str, round_ts: datetime) -> tuple[datetime, datetime]:
    """Wall-clock span of a round's probes: first attempt start .. last attempt end."""
    with store.open_store(db_path, read_only=True) as con:
        row = con.execute(
            "SELECT min(a.started_at), max(a.started_at + to_microseconds(CAST(a.total_ms * 1000 AS BIGINT)))"
            " FROM attempts a JOIN rounds r USING (round_id) WHERE r.model = ? AND r.round_ts = ?",
            [MODEL, round_ts],
        ).fetchone()
    assert row is not None and row[0] is not None, f"no attempts landed for the round at {round_ts}"
    return row[0], row[1]


def _complete_round_times(db_path: str) -> list[datetime]:
    with store.open_store(db_path, read_only=True) as con:
        df = store.complete_rounds(con, model=MODEL)
    return [ts.to_pydatetime() for ts in df["round_ts"]]


def _api_logs(needle: str) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter

    with get_client(sync_client=True) as client:
        logs = client.read_logs(LogFilter(), limit=200)
    return [log.message for log in logs if needle in log.message]


@pytest.mark.e2e
@pytest.mark.timing  # a 0.5 s slot wait: a starved CPU turns it into a skip
def test_second_round_is_skipped_with_a_clear_log_line(
    prefect_harness: None,
    sim: SimulatorHandle,
    env: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("CANARY_ROUND_WAIT_S", "0.5")
    sim.set_fleet(LONG_FLEET)
    try:
        first = Runner(T0, env)
        first.start()
        _wait_until_held(MODEL, first)
        with caplog.at_level(logging.WARNING):
            second = Runner(T0 + timedelta(minutes=30), env)
            second.start()
            second.join(60)
        first.join(60)
    finally:
        sim.set_fleet(FLEET)

    assert first.error is None and first.summary is not None, first.error
    assert _skipped(second), (second.summary, second.error)
    # Only the first round landed anything: the skipped one never probed.
    assert _complete_round_times(env["db_path"]) == [T0]
    line = f"Round skipped: another round of {MODEL} still holds its slot"
    seen = [r.getMessage() for r in caplog.records] + _api_logs("Round skipped")
    assert any(line in m for m in seen), seen
    assert _active_slots(MODEL) == 0  # the finished round gave its slot back


@pytest.mark.e2e
def test_second_round_waits_and_never_overlaps(
    prefect_harness: None, env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANARY_ROUND_WAIT_S", "60")
    ts_a, ts_b = T0 + timedelta(hours=1), T0 + timedelta(hours=1, minutes=30)
    first = Runner(ts_a, env)
    first.start()
    _wait_until_held(MODEL, first)
    second = Runner(ts_b, env)
    second.start()
    first.join(90)
    second.join(90)

    assert first.error is None and second.error is None, (first.error, second.error)
    assert not _skipped(second)
    a_start, a_end = _probe_window(env["db_path"], ts_a)
    b_start, b_end = _probe_window(env["db_path"], ts_b)
    assert a_end - a_start >= timedelta(seconds=1.5)  # A really was slow, so B really had to wait
    assert b_start >= a_end, f"rounds overlapped: A {a_start}..{a_end}, B {b_start}..{b_end}"
    assert _complete_round_times(env["db_path"]) == [ts_a, ts_b]


def _journal_leases(db_path: str) -> list[str]:
    """The slot leases the round journals beside `db_path` name."""
    found = []
    for path in spool_dir(db_path).glob("*" + JOURNAL_SUFFIX):
        lease = json.loads(path.read_text()).get("lease_id")
        if lease:
            found.append(lease)
    return found


def _lease_lives(lease_id: str) -> bool:
    """The server still holds the lease (renewing it works)."""
    from uuid import UUID

    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as client:
            client.renew_concurrency_lease(UUID(lease_id), 120)
    except Exception:
        return False
    return True


@pytest.mark.e2e
@pytest.mark.timing  # a 0.5 s slot wait: a starved CPU turns it into a skip
def test_a_killed_rounds_slot_comes_back_through_its_lease_at_once(
    prefect_harness: None,
    env: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A round SIGKILLed while it holds its slot would keep it for its lease (120 s): the next round finds its
    journal (pid gone), releases that lease through Prefect and runs; no limit's `active_slots` is written."""
    from prefect.settings import PREFECT_API_URL

    from flows.round import canary_round

    killed_at, ts = T0 + timedelta(hours=3), T0 + timedelta(hours=3, minutes=30)
    args = json.dumps({"model": MODEL, "round_ts": killed_at.isoformat(), "overrides": env})
    child_env = {**os.environ, FAILPOINTS_ENV: "after-probe", "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    proc = subprocess.run([sys.executable, "-m", "tests.support.round_proc", args], cwd=Path(__file__).parents[2],
                          env=child_env, capture_output=True, text=True, timeout=180)
    assert proc.returncode < 0, proc.stderr[-2000:]  # SIGKILLed holding its slot
    (dead_lease,) = _journal_leases(env["db_path"])
    assert _lease_lives(dead_lease) and _active_slots(MODEL) == 1

    monkeypatch.setenv("CANARY_ROUND_WAIT_S", "0.5")
    with caplog.at_level(logging.WARNING):
        summary = canary_round(model=MODEL, round_ts=ts, overrides=env)
    assert not summary.get("skipped") and summary["endpoints"] == 2, summary
    seen = [r.getMessage() for r in caplog.records] + _api_logs("Released the round slot")
    assert any(f"Released the round slot of {MODEL}" in m and dead_lease in m for m in seen), seen
    assert not _lease_lives(dead_lease)  # released on the server, not left to run out
    assert _active_slots(MODEL) == 0
