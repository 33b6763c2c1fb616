"""`canary demo --days`: a few real rounds of the history land with suspensions, expiries and restores.

12 rounds (00:00-05:30 simulated) on a 1 h / 2 h ladder: the always-failing endpoints are suspended in the
second round and expire an hour later (then suspended one rung longer); nebius/fp8's replies are cut from
02:00 to 04:00, so it is suspended and restored by two clean rounds after 04:00.

The history is built by the default engine (the round's steps, probes pipelined: provider_canary/demo/pipeline.py)
and once more by a `canary-round` flow run per round; both must store the same history.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from provider_canary.demo.history import HISTORY_START, HistoryResult, build_history
from provider_canary.demo.scenario import admin_schedule, config_file_text, history_overrides
from tasks import store
from tasks.config.loading import load_config

# A pipelined history takes both cores while it is built, and its verdicts rest on TTFT margins that a busy
# machine would eat: scripts/test runs these tests first, with nothing beside them (`alone`).
pytestmark = [pytest.mark.e2e, pytest.mark.timing, pytest.mark.alone]
MODEL = "meta-llama/llama-3.3-70b-instruct"


def at(hour: float) -> datetime:
    return HISTORY_START + timedelta(hours=hour)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, HistoryResult]:
    db = str(tmp_path_factory.mktemp("history") / "h.duckdb")
    out = io.StringIO()
    result = build_history(days=12 / 48, db_path=db, ladder=("1h", "2h"), out=out)
    return db, out.getvalue(), result


@pytest.fixture(scope="module")
def built_by_flows(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("history-flows") / "h.duckdb")
    build_history(days=12 / 48, db_path=db, ladder=("1h", "2h"), progress=False, engine="flow")
    return db


#: What two builds of one history must agree on, row for row (times of day and reply texts aside).
SAME_HISTORY = {
    "rounds": "SELECT round_id, status, endpoints, attempt_count > 0 FROM rounds",
    "languages": "SELECT round_id, tag, attempt_no, language FROM attempts WHERE contract = 'language'",
    "outcomes": "SELECT round_id, tag, contract, outcome, reason FROM outcomes",
    "statuses": "SELECT round_id, tag, derived_status FROM v_endpoint_rounds",
    "decisions": "SELECT model, tag, action, mode, decided_at, until, ladder_step, reason FROM decisions",
    "exclusions": "SELECT tag, reason, added_at, until, removed_at FROM exclusions",
}


def _rows(db: str, sql: str) -> list[tuple[Any, ...]]:
    con = store.open_snapshot(db)
    try:
        return sorted(con.execute(sql).fetchall(), key=repr)
    finally:
        con.close()


@pytest.mark.parametrize("what", sorted(SAME_HISTORY))
def test_the_pipelined_rounds_store_what_flow_runs_store(
    built: tuple[str, str, HistoryResult], built_by_flows: str, what: str
) -> None:
    pipelined, by_flows = _rows(built[0], SAME_HISTORY[what]), _rows(built_by_flows, SAME_HISTORY[what])
    assert pipelined, f"no {what} stored"
    assert pipelined == by_flows


def test_an_unknown_engine_or_confirmations_without_flow_runs_are_refused(tmp_path: Path) -> None:
    from tasks.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown history engine"):
        build_history(days=1, db_path=str(tmp_path / "x.duckdb"), engine="fast")
    with pytest.raises(ConfigError, match="need the flow engine"):
        build_history(days=1, db_path=str(tmp_path / "x.duckdb"), engine="pipeline", confirmations=True)
    assert not (tmp_path / "x.duckdb").exists()


def test_rounds_land_and_progress_is_reported(built: tuple[str, str, HistoryResult]) -> None:
    db, text, result = built
    assert result.rounds == 12
    assert "done: 12 rounds in" in text and "MB" in text
    con = store.open_snapshot(db)  # the analysts' copy holds the last round
    try:
        rows = con.execute(
            "SELECT count(*), min(round_ts), max(round_ts) FROM rounds WHERE status = 'complete'"
        )
        row = rows.fetchone()
        assert row is not None
        count, first, last = row
        modes = {r[0] for r in con.execute("SELECT DISTINCT mode FROM rounds").fetchall()}
    finally:
        con.close()
    assert (count, first, last) == (12, at(0), at(5.5))
    assert modes == {"enforce"}


def test_suspension_expiry_and_restore(built: tuple[str, str, HistoryResult]) -> None:
    db, _, _ = built
    con = store.open_snapshot(db)
    try:
        d = con.execute(
            "SELECT tag, action, decided_at, ladder_step FROM decisions WHERE model = ?"
            " ORDER BY decided_at, action",
            [MODEL],
        ).df()
        ended = con.execute("SELECT tag, ended_by FROM v_suspensions WHERE mode = 'enforce'").df()
        ops = con.execute("SELECT tag, added_at, until, removed_at FROM exclusions ORDER BY added_at").df()
    finally:
        con.close()

    hyper = d[d["tag"] == "hyperbolic/fp8"]
    assert list(hyper["action"][:3]) == ["suspend", "expire", "suspend"]
    assert hyper["decided_at"].iloc[0] == at(0.5)  # fails every round: second round
    assert hyper["decided_at"].iloc[1] == at(1.5)  # 1 h rung, noticed by the round at its end
    assert list(hyper["ladder_step"][:3]) == [1, 1, 2]

    nebius = d[d["tag"] == "nebius/fp8"]
    suspend = nebius[nebius["action"] == "suspend"]["decided_at"]
    restore = nebius[nebius["action"] == "restore"]["decided_at"]
    assert len(suspend) >= 1 and at(2.0) <= suspend.iloc[0] <= at(2.5)
    assert len(restore) == 1 and at(4.5) <= restore.iloc[0] <= at(5.5)
    assert {"expire", "restore"} <= set(ended["ended_by"])

    # The operational layer: chutes added then removed, groq added with an end of its own.
    chutes, groq = ops[ops["tag"] == "chutes/bf16"].iloc[0], ops[ops["tag"] == "groq"].iloc[0]
    assert chutes["removed_at"] > chutes["added_at"]
    assert groq["until"] > groq["added_at"] and pd.isna(groq["removed_at"])


def test_admin_schedule_scales_with_the_history() -> None:
    assert admin_schedule(4) == []
    for rounds in (12, 48, 336):
        events = admin_schedule(rounds)
        add, expiring, remove = events
        assert (add.action, add.tag, remove.action, remove.tag) == (
            "add",
            "chutes/bf16",
            "remove",
            "chutes/bf16",
        )
        assert 0 < add.round_no < expiring.round_no < remove.round_no < rounds
        assert expiring.until_rounds is not None and expiring.round_no + expiring.until_rounds < rounds


def test_thresholds_scale_with_the_simulator(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text("", encoding="utf-8")  # a named exclusions file must exist
    ov = history_overrides(
        "http://127.0.0.1:1/api/v1",
        str(tmp_path / "h.duckdb"),
        time_scale=0.05,
        ladder=("3h", "6h"),
        exclusions_file=str(tmp_path / "x.toml"),
        publish_dir=str(tmp_path / "pub"),
    )
    assert ov["ttft_s"] == pytest.approx(0.5)  # 10 s threshold x 0.05, like the 12 s slow start -> 0.6 s
    assert ov["mode"] == "enforce"
    cfg_path = tmp_path / "h.canary.toml"
    cfg_path.write_text(config_file_text(ov))
    cfg = load_config(cfg_path)
    assert (cfg.ttft_s, cfg.ladder, cfg.db_path) == (
        0.5,
        (timedelta(hours=3), timedelta(hours=6)),
        ov["db_path"],
    )


def test_start_must_be_aware_and_days_positive(tmp_path: Path) -> None:
    from tasks.errors import ConfigError

    with pytest.raises(ConfigError, match="at least one round"):
        build_history(days=0.001, db_path=str(tmp_path / "x.duckdb"))
    with pytest.raises(ConfigError, match="timezone-aware"):
        build_history(days=1, db_path=str(tmp_path / "x.duckdb"), start=datetime(2026, 11, 2))
    assert not (tmp_path / "x.duckdb").exists()
    assert HISTORY_START.tzinfo is UTC


def live_and_replayed(db: str, config: str, tmp: Path, replay_config: str | None = None
                      ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(live decisions, replayed decisions) of a history: `canary export-history` then `canary replay`
    (under `replay_config` if given: the analyst's own canary.toml)."""
    import json
    import subprocess
    import sys

    canary = str(Path(sys.executable).parent / "canary")
    lines = tmp / "history.jsonl"
    for argv in (["export-history", str(lines)],):
        done = subprocess.run([canary, *argv, "--config", config, "--db", db], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
    replayed = subprocess.run([canary, "replay", str(lines), "--config", replay_config or config, "--json"],
                              capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 0, replayed.stderr
    replay_rows = sorted(
        (d["at"], d["model"], d["tag"], d["action"], d["until"], d["ladder_step"])
        for d in map(json.loads, replayed.stdout.splitlines())
    )
    with store.open_store(db, read_only=True) as con:
        live = con.execute(
            "SELECT decided_at, model, tag, action, until, ladder_step FROM decisions WHERE actor = 'canary'"
        ).fetchall()
    iso = lambda ts: ts.astimezone(UTC).isoformat().replace("+00:00", "Z") if ts else None  # noqa: E731
    live_rows = sorted((iso(a), m, t, act, iso(u), step) for a, m, t, act, u, step in live)
    return live_rows, replay_rows


def test_replay_of_the_exported_history_gives_the_live_decisions(
    built: tuple[str, str, HistoryResult], tmp_path: Path
) -> None:
    db, _, result = built
    live, replayed = live_and_replayed(db, result.config_path, tmp_path)
    assert len(live) >= 5  # suspensions, expiries and a restore happened
    assert replayed == live


def test_an_enforce_history_replays_as_enforce_under_an_observe_config(
    built: tuple[str, str, HistoryResult], tmp_path: Path
) -> None:
    """The export records each round's mode, so an analyst's observe-mode canary.toml does not turn the
    live `suspend` decisions into `would_suspend`."""
    import re

    db, _, result = built
    text = Path(result.config_path).read_text(encoding="utf-8")
    assert re.search(r'^mode = "enforce"$', text, flags=re.M), text
    observe = tmp_path / "observe.toml"
    observe.write_text(re.sub(r'^mode = "enforce"$', 'mode = "observe"', text, flags=re.M), encoding="utf-8")
    live, replayed = live_and_replayed(db, result.config_path, tmp_path, str(observe))
    assert any(row[3] == "suspend" for row in live)
    assert replayed == live
