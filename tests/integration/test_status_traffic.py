"""`canary status` says what traffic sees (issue 30: in observe mode it showed shadow suspensions as
"suspended" with an end date while nothing was excluded, and ~13 spend lines came before the endpoints).

Real databases built through the store's own writes (tests/support/admin_db.py), the real command (CliRunner)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from provider_canary.cli.main import app
from tasks import store
from tasks.core.types import EndpointState, Mode, OperationalExclusion
from tests.support.admin_db import MODEL, SUSPENDED, TAGS, build_db, write_config

pytestmark = pytest.mark.integration
#: The keys `canary status --json` had before this change: an interface, kept.
OLD_KEYS = {"mode", "endpoints", "rounds", "deferred_waiting", "possible_duplicate_alerts", "alerts", "spend"}
OLD_ROW_KEYS = {"model", "tag", "mode", "state", "fail_streak", "clean_streak", "suspended_until", "ladder_step",
                "excluded_by", "openrouter"}


def status(cfg: Path, *more: str) -> str:
    result = CliRunner().invoke(app, ["status", "--config", str(cfg), *more])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def observe_db(tmp_path: Path) -> tuple[Path, datetime]:
    """Observe mode: SUSPENDED are shadow suspensions (nothing excluded by the canary); `groq` is excluded by
    an operator until tomorrow."""
    db = tmp_path / "c.duckdb"
    now = datetime.now(UTC).replace(microsecond=0)
    build_db(db, now=now)
    until = now + timedelta(days=1)
    with store.open_store(db) as con:
        con.execute("DELETE FROM endpoint_state")
        store.save_states(con, [
            replace(EndpointState(MODEL, t, Mode.OBSERVE, fail_streak=2), suspended_until=until, suspended_at=now,
                    ladder_step=1) if t in SUSPENDED else EndpointState(MODEL, t, Mode.OBSERVE)
            for t in TAGS
        ])
        store.set_setting(con, store.MODE_KEY, "observe", at=now, who="test")
        store.add_exclusion(con, OperationalExclusion("fireworks", "429 storm", "alice", now, MODEL,
                                                      now + timedelta(hours=2)))
    return write_config(tmp_path, db=db), until


def table(text: str) -> dict[str, list[str]]:
    return {ln.split()[1]: ln.split() for ln in text.splitlines() if ln.startswith(MODEL)}


def test_observe_mode_leads_with_what_traffic_avoids_and_calls_shadow_decisions_shadow(tmp_path: Path) -> None:
    cfg, until = observe_db(tmp_path)
    lines = status(cfg).splitlines()
    assert lines[0].startswith("mode: observe: ") and "`canary mode enforce`" in lines[0]
    assert lines[1].startswith("excluded now (what traffic avoids") and "`canary ignore-list`" in lines[1]
    assert lines[2].startswith(f"  {MODEL}: fireworks (operational until ")  # only the operator's exclusion
    assert lines[3] == "shadow decisions (observe mode: not in traffic):"
    assert lines[4] == f"  {MODEL}: " + ", ".join(
        f"{t} would be suspended until {until:%Y-%m-%d %H:%M} UTC" for t in SUSPENDED)
    rows = table("\n".join(lines))
    for tag in SUSPENDED:  # routable, "would suspend": never "suspended" while nothing is excluded
        assert rows[tag][2:5] == ["routable", "would", "suspend"], rows[tag]
    assert not any("suspended" in " ".join(r) for r in rows.values())
    assert rows["fireworks"][2] == "excluded" and rows["fireworks"][-1] == "operational"


def test_enforce_mode_names_each_exclusion_and_its_layer(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    build_db(db)
    lines = status(write_config(tmp_path, db=db)).splitlines()
    assert lines[0].startswith("mode: enforce: ") and "`canary mode observe`" in lines[0]
    assert [e.split(" (")[0] for e in lines[2].removeprefix(f"  {MODEL}: ").split(", ")] == list(SUSPENDED)
    assert all(" (canary until " in e for e in lines[2].split(", "))
    assert not any(ln.startswith("shadow decisions") for ln in lines)
    rows = table("\n".join(lines))
    assert [rows[t][2:4] for t in SUSPENDED] == [["excluded", "suspended"]] * len(SUSPENDED)
    assert rows["fireworks"][2:4] == ["routable", "ok"]


def test_the_spend_is_one_line_and_the_uptime_column_has_a_legend(tmp_path: Path) -> None:
    cfg, _ = observe_db(tmp_path)
    lines = status(cfg).splitlines()
    spend = [ln for ln in lines if ln.startswith(("canary spend", "last 7 days", "per model", "  20"))]
    assert len(spend) == 1 and spend[0].startswith("canary spend: today $0 ")
    assert "last 7 days $0; projected $0/day (no budget: budget_usd_per_day = 0)" in spend[0]
    header = next(i for i, ln in enumerate(lines) if ln.startswith("model "))
    assert "OpenRouter uptime 5m/30m/1d" in lines[header]
    legend = lines[header + 1 + len(TAGS)]
    assert legend.startswith("OpenRouter uptime: its own figures") and "5 min / 30 min / 1 day, in %" in legend
    assert "sN = the listing's status N" in legend


def test_json_keeps_every_key_and_adds_what_traffic_sees(tmp_path: Path) -> None:
    cfg, until = observe_db(tmp_path)
    report: dict[str, Any] = json.loads(status(cfg, "--json"))
    assert OLD_KEYS < set(report) and "excluded_now" in report
    assert [(e["tag"], e["layer"]) for e in report["excluded_now"]] == [("fireworks", "operational")]
    rows = {r["tag"]: r for r in report["endpoints"]}
    assert all(OLD_ROW_KEYS < set(r) for r in rows.values())
    shadow = rows[SUSPENDED[0]]
    assert (shadow["state"], shadow["mode"], shadow["suspended_until"]) == ("suspended", "observe", until.isoformat())
    assert (shadow["shadow"], shadow["in_traffic"], shadow["policy"]) == (True, True, "would suspend")
    assert (rows["fireworks"]["in_traffic"], rows["fireworks"]["excluded_by"]) == (False, ["operational"])


def test_a_live_source_that_does_not_answer_is_said_under_the_mode(tmp_path: Path) -> None:
    """`live_source = "prometheus"`: status asks Prometheus once and says it loudly when it cannot (no live
    suspicion meanwhile); with the database as the live source there is nothing to ask and no line."""
    import socket

    build_db(tmp_path / "c.duckdb")
    cfg = write_config(tmp_path)
    assert "live evidence" not in status(cfg)
    assert json.loads(status(cfg, "--json"))["live_evidence"] == {"source": "db"}
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    cfg.write_text(cfg.read_text() + f'live_source = "prometheus"\nprometheus_url = "{dead}"\n')
    lines = status(cfg).splitlines()
    assert lines[1] == (f"live evidence: FAILING: Prometheus at {dead} does not answer (ConnectError); no live "
                        "suspicion until it answers")
    live = json.loads(status(cfg, "--json"))["live_evidence"]
    assert (live["source"], live["up"], live["routers"], live["error"]) == ("prometheus", False, 0,
                                                                           "does not answer (ConnectError)")


def test_status_warns_when_alerts_would_only_reach_a_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.alerts.route import NO_SLACK

    cfg, _ = observe_db(tmp_path)
    for var in ("SLACK_BOT_TOKEN", "SLACK_CHANNEL", "SLACK_WEBHOOK_URL", "SLACK_API_URL", "PREFECT_API_URL"):
        monkeypatch.delenv(var, raising=False)
    assert f"alerts: WARNING: {NO_SLACK}" in status(cfg).splitlines()
    assert json.loads(status(cfg, "--json"))["slack_warning"] == NO_SLACK
    monkeypatch.setenv("SLACK_WEBHOOK_URL", "https://hooks.slack.example/services/T0/B0/x")
    assert not any(ln.startswith("alerts: WARNING") for ln in status(cfg).splitlines())
    assert json.loads(status(cfg, "--json"))["slack_warning"] is None
