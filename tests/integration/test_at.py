"""`canary at`: a report filed inside a simulated incident names the faulty endpoint; outside it, it does not.

The history is the session's shared one (tests/integration/test_notebooks.py): nebius/fp8 cuts its replies
to a few words between 02:00 and 04:00 UTC on 2026-11-02 and is healthy again from 04:00.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from typer.testing import CliRunner

from provider_canary.cli.main import app
from tests.integration.test_notebooks import MODEL, SharedHistory, shared_history

# A pipelined history takes both cores while it is built, and its verdicts rest on TTFT margins that a busy
# machine would eat: scripts/test runs these tests alone, with the timing tests.
pytestmark = [pytest.mark.e2e, pytest.mark.timing]  # one process runs this file and test_notebooks.py

INCIDENT = "2026-11-02T03:00Z"  # inside nebius/fp8's first flapping spell
HEALTHY = "2026-11-02T07:00Z"  # nebius/fp8 healthy since 04:00
FLAPPER = "nebius/fp8"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> SharedHistory:
    return shared_history(tmp_path_factory)


def at(history: SharedHistory, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["at", "--config", history.config, "--model", MODEL, *args])
    if result.exit_code not in (0, 2):
        raise AssertionError(f"canary at crashed: {result.exception!r}") from result.exception
    return result.exit_code, result.stdout, result.stderr


def test_cli_names_the_faulty_endpoint_inside_the_incident(history: SharedHistory) -> None:
    code, out, err = at(history, "--time", INCIDENT, "--window", "1h")
    assert code == 0, err
    suspects_line = next(line for line in out.splitlines() if line.startswith("Suspects"))
    assert FLAPPER in suspects_line
    assert "refusal fail truncated" in out  # the reason of nebius' failing outcome, with its excerpt
    assert "reply: " in out
    assert "google-vertex      builtin" in out  # the builtin layer in force at T


def test_cli_json_inside_and_outside_the_incident(history: SharedHistory) -> None:
    code, out, _ = at(history, "--time", INCIDENT, "--window", "1h", "--json")
    assert code == 0
    inside = json.loads(out)
    nebius = next(e for e in inside["endpoints"] if e["tag"] == FLAPPER)
    assert inside["suspects"][0] == FLAPPER  # the most recent onset: the change the user noticed
    assert nebius["failing_since"].startswith("2026-11-02T0")  # 02:00, or earlier after a blip
    assert nebius["status_at_t"] == "fail"
    assert {f["reason"] for f in nebius["findings"]} == {"truncated"}
    assert inside["route_events"] == []

    code, out, _ = at(history, "--time", HEALTHY, "--window", "1h", "--json")
    assert code == 0
    outside = json.loads(out)
    assert FLAPPER not in outside["suspects"]
    assert next(e for e in outside["endpoints"] if e["tag"] == FLAPPER)["status_at_t"] == "clean"
    assert "hyperbolic/fp8" in outside["suspects"]  # the always-corrupted endpoint is named at any time


def test_pure_report_from_fetched_rows(history: SharedHistory) -> None:
    from tasks import store
    from tasks.at import build_report, parse_time
    from tasks.config.loading import load_config
    from tasks.core.exclusions import load_builtin
    from tasks.store.at_inputs import fetch_report_inputs

    t, window = parse_time(INCIDENT), timedelta(hours=1)
    con = store.open_snapshot(history.db)
    try:
        inputs = fetch_report_inputs(con, MODEL, t - window, t + window)
        ops = con.execute("SELECT tag, added_at, removed_at FROM exclusions ORDER BY added_at").df()
    finally:
        con.close()
    builtin = load_builtin(load_config(history.config).exclusions_file)
    report = build_report(MODEL, t, window, builtin=builtin, **inputs)
    assert FLAPPER in report.suspects
    assert len(report.round_ids) == 5  # 02:00 .. 04:00
    assert report.nearest_round == f"{MODEL}@2026-11-02T03:00:00Z"
    assert "google-vertex" in report.ignore_at_t
    layers = {(f.tag, f.layer) for f in report.in_force}
    assert ("google-vertex", "builtin") in layers
    assert ("hyperbolic/fp8", "canary") in layers  # suspended in the first rounds, on the short ladder

    # The operational layer at a time inside the chutes exclusion, and not after its removal.
    chutes = ops[ops["tag"] == "chutes/bf16"].iloc[0]
    during = chutes["added_at"].to_pydatetime() + timedelta(minutes=15)
    after = chutes["removed_at"].to_pydatetime() + timedelta(minutes=15)
    con = store.open_snapshot(history.db)
    try:
        rep_during = build_report(
            MODEL,
            during,
            window,
            builtin=(),
            **fetch_report_inputs(con, MODEL, during - window, during + window),
        )
        rep_after = build_report(
            MODEL,
            after,
            window,
            builtin=(),
            **fetch_report_inputs(con, MODEL, after - window, after + window),
        )
    finally:
        con.close()
    assert ("chutes/bf16", "operational") in {(f.tag, f.layer) for f in rep_during.in_force}
    assert "chutes/bf16" in rep_during.ignore_at_t
    assert "chutes/bf16" not in rep_after.ignore_at_t
    assert any(c["tag"] == "chutes/bf16" for c in rep_after.exclusion_changes)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--time", "yesterday-ish"], "--time must be an ISO time"),
        (["--time", INCIDENT, "--window", "0h"], "--window must be more than 0"),
        (["--time", INCIDENT, "--window", "soon"], "--window"),
    ],
)
def test_bad_input_is_one_line_exit_2(history: SharedHistory, args: list[str], needle: str) -> None:
    code, out, err = at(history, *args)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert "Traceback" not in err


def test_unknown_model_and_missing_database(history: SharedHistory, tmp_path: pytest.TempPathFactory) -> None:
    result = CliRunner().invoke(
        app, ["at", "--config", history.config, "--model", "nobody/none", "--time", INCIDENT]
    )
    assert result.exit_code == 2 and "no rounds of 'nobody/none'" in result.stderr
    missing = str(tmp_path) + "/absent.duckdb"  # type: ignore[operator]
    result = CliRunner().invoke(app, ["at", "--db", missing, "--model", MODEL, "--time", INCIDENT])
    assert result.exit_code == 2 and "no database" in result.stderr
    assert not __import__("os").path.exists(missing)  # a typo must not create an empty database


def test_suspension_ended_by_a_restore_is_not_in_force() -> None:
    """Pure: a restore before T ends the canary layer even though the planned end is later."""
    from tasks.at import build_report

    t0 = datetime(2026, 11, 2, 2, 0, tzinfo=UTC)
    rounds = pd.DataFrame(
        {
            "round_id": ["r1", "r2"],
            "round_ts": [t0, t0 + timedelta(hours=2)],
            "tag": ["x", "x"],
            "provider_name": ["X", "X"],
            "status": ["fail", "clean"],
        }
    )
    susp = pd.DataFrame(
        {
            "tag": ["x"],
            "mode": ["enforce"],
            "started_at": [t0],
            "reason": ["failed"],
            "ladder_step": [1],
            "planned_until": [t0 + timedelta(days=1)],
            "ended_at": [t0 + timedelta(hours=1)],
        }
    )
    empty = pd.DataFrame(columns=["round_id", "round_ts", "tag", "contract", "outcome", "reason", "evidence"])
    during = build_report(
        "m/m",
        t0 + timedelta(minutes=30),
        timedelta(hours=3),
        endpoint_rounds=rounds,
        outcomes=empty,
        suspensions=susp,
    )
    later = build_report(
        "m/m",
        t0 + timedelta(hours=2),
        timedelta(hours=3),
        endpoint_rounds=rounds,
        outcomes=empty,
        suspensions=susp,
    )
    assert during.ignore_at_t == ("x",) and [f.layer for f in during.in_force] == ["canary"]
    assert later.ignore_at_t == () and later.in_force == ()
    assert during.suspects == ("x",) and during.nearest_round == "r1" and later.nearest_round == "r2"
