"""Bad input never costs the other endpoints' results (docs/design.md "a crashed round is never judged",
Standards: "never lose the other providers' results")."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import start_simulator
from tasks import store

pytestmark = pytest.mark.e2e
MODEL = "acme/tiny-1"
FLEET = {
    "models": [
        {
            "id": MODEL,
            "endpoints": [
                {"tag": "alpha", "provider_name": "Alpha"},
                {"tag": "beta", "provider_name": "Beta"},
                {
                    "tag": "gamma",
                    "provider_name": "Gamma",
                    "faults": [{"kind": "mojibake"}, {"kind": "invalid_json"}],
                },
            ],
        }
    ]
}


def test_an_internal_probe_error_on_one_endpoint_keeps_every_other_result(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.round import canary_round

    # A bug of ours inside the probe (it runs in the probe worker process: tasks/probe/worker.py), on beta only,
    # with the API key in its message.
    monkeypatch.setenv("CANARY_TEST_FAILPOINTS", "probe-raises:beta")
    with start_simulator(parse_fleet(FLEET), time_scale=0.1) as sim:
        monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
        summary = canary_round(
            model=MODEL,
            round_ts=datetime(2026, 11, 4, 9, 0, tzinfo=UTC),
            overrides={
                "base_url": sim.base_url,
                "db_path": str(tmp_path / "c.duckdb"),
                "models": [MODEL],
                "publish_dir": str(tmp_path / "pub"),
                "ttft_s": 6.0,  # no latency fault here: far above a loaded machine's lateness
                "probe_budget_s": 8.0,
            },
        )
    with store.open_store(tmp_path / "c.duckdb") as con:
        rows = con.execute("SELECT tag, contract, outcome, reason FROM outcomes").fetchall()
        details = [
            r[0] for r in con.execute("SELECT error_detail FROM attempts WHERE tag = 'beta'").fetchall()
        ]
        status = con.execute("SELECT status FROM rounds").fetchone()
    outcomes = {(t, c): (o, r) for t, c, o, r in rows}
    assert status == ("complete",)
    assert all(outcomes[("alpha", c)][0] == "pass" for c in ("ttft", "refusal", "structured", "language"))
    assert outcomes[("gamma", "structured")] == ("fail", "invalid_json")
    assert outcomes[("gamma", "language")][1] == "encoding_corruption"
    assert {outcomes[("beta", c)][0] for c in ("ttft", "refusal", "structured", "language")} <= {
        "transport",
        "inconclusive",
    }
    assert details and all("probe failed internally" in d and "FailpointError" in d for d in details)
    assert not any(sim.api_key in d for d in details)
    assert summary["attempts"] >= 12
