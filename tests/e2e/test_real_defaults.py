"""The one test on the real defaults, in real time: a `canary-round` flow run over the default fleet with the
config's own TTFT threshold (10 s), timeouts and probe budget, the simulator at its real delays.

The fleet's slow starter sends its first text after 12 s with `: OPENROUTER PROCESSING` keep-alives every 2 s:
it is measured at >= 12 s (the keep-alives are not a first token) and fails the 10 s threshold, while every
healthy endpoint passes everything. Everything else in the suite and `canary demo` run on a compressed clock
(a 1 s threshold against a 1.2-1.5 s slow start). This round waits ~25 s (the tools contract's two turns on the
slow starter), almost all of it idle.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from provider_canary.simulator.server import start_simulator
from tasks import store
from tasks.config import CanaryConfig
from tests.e2e.test_round import EXPECTED_STATUS, HEALTHY, MODEL
from tests.support.rounds import round_overrides

pytestmark = pytest.mark.e2e

TIMING_KEYS = ("ttft_s", "read_timeout_s", "probe_budget_s", "connect_timeout_s")


def test_a_round_on_the_real_defaults_fails_the_12_s_slow_start_and_nothing_healthy(
    prefect_harness: None, tmp_path: Path
) -> None:
    from flows.round import canary_round

    assert CanaryConfig().ttft_s == 10.0
    with start_simulator(None, time_scale=1.0) as sim:
        os.environ["OPENROUTER_API_KEY"] = sim.api_key
        overrides = round_overrides(sim, tmp_path, MODEL, refusal_controls=["amazon-bedrock"])
        assert not set(TIMING_KEYS) & set(overrides)  # the config's own defaults, nothing compressed
        summary = canary_round(model=MODEL, round_ts=datetime(2026, 11, 2, 10, 0, tzinfo=UTC),
                               overrides=overrides)
    assert summary["status"] == "complete"
    with store.open_store(str(tmp_path / "canary.duckdb"), read_only=True) as con:
        slow = con.execute(
            "SELECT ttft_ms, keepalive_count, http_status, error_class FROM attempts"
            " WHERE round_id = ? AND tag = 'lambda/fp8' AND contract = 'ttft'", [summary["round_id"]]
        ).fetchone()
        verdict = con.execute(
            "SELECT outcome, reason FROM outcomes WHERE round_id = ? AND tag = 'lambda/fp8' AND contract = 'ttft'",
            [summary["round_id"]],
        ).fetchone()
        healthy = con.execute(
            "SELECT tag, contract, outcome, reason FROM outcomes WHERE round_id = ? AND tag IN ?"
            " AND outcome <> 'pass'", [summary["round_id"], HEALTHY]
        ).fetchall()
        statuses = dict(con.execute("SELECT tag, status FROM endpoint_rounds WHERE round_id = ?",
                                    [summary["round_id"]]).fetchall())
    ttft_ms, keepalives, http_status, error_class = slow
    assert http_status == 200 and error_class is None
    assert ttft_ms >= 12_000
    assert keepalives >= 5  # the keep-alives arrived and did not count as the first token
    assert verdict == ("fail", "ttft_exceeded")
    assert healthy == []
    assert statuses == EXPECTED_STATUS
