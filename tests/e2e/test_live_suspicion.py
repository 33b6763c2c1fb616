"""Live traffic as suspicion, pinned probes as proof: real `canary-round` flow runs, the real router in front
of the simulator (a child process on a shared step clock), the watcher in between.

    T0        full round: every endpoint clean
    T0+5m     `broken` starts answering HTTP 200 with an HTML page (a protocol violation); `blippy` answers
              502 until T0+6m30s (a transient blip)
    T0+6m     live traffic through the router: 25 requests on each of broken, blippy, alpha
    T0+7m     the watcher suspects broken and blippy from the router's counts -> one confirmation round of
              both, at once: broken fails (protocol_violation), blippy is clean again
    T0+12m    broken's own follow-up confirmation fails again -> suspended, 18 minutes before the next round
    T0+13m    the watcher resolves the suspicions: broken confirmed, blippy cleared (nothing changed)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from flows.watch import watch_once
from provider_canary.demo.simulator_process import SharedStepClock, SimulatorChild, simulator_process
from provider_canary.router.route_events import flush_all
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import start_router
from tasks import store
from tasks.config.loading import apply_overrides
from tasks.core.plan import make_round_id
from tasks.round.confirmations import run_confirmations
from tests.support.rounds import round_overrides

# Clean rounds rest on TTFT margins (ttft_s 1 s at time scale 0.1) that a loaded machine can eat: the timing lane.
pytestmark = [pytest.mark.e2e, pytest.mark.timing, pytest.mark.timeout(600)]

MODEL = "acme/live-model"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
HEALTHY = ["alpha", "beta", "delta", "gamma"]


def _iso(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


FLEET = {"models": [{"id": MODEL, "endpoints": [
    *[{"tag": t, "provider_name": t.title()} for t in HEALTHY],
    {"tag": "broken", "provider_name": "Broken", "faults": [
        {"kind": "html_body", "windows": [{"start": _iso(T0 + timedelta(minutes=5)),
                                           "end": _iso(T0 + timedelta(hours=2))}]}]},
    {"tag": "blippy", "provider_name": "Blippy", "faults": [
        {"kind": "http_error_before_stream", "status": 502,
         "windows": [{"start": _iso(T0 + timedelta(minutes=5)), "end": _iso(T0 + timedelta(minutes=6, seconds=30))}]}]},
]}]}


@pytest.fixture(scope="module")
def clock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedStepClock]:
    c = SharedStepClock(T0, tmp_path_factory.mktemp("clock") / "clock.bin")
    yield c
    c.close()


@pytest.fixture(scope="module")
def sim(clock: SharedStepClock) -> Iterator[SimulatorChild]:
    with simulator_process(FLEET, time_scale=0.1, clock=clock) as handle:
        yield handle


def live_traffic(sim: SimulatorChild, db: str, tmp: Path, clock: SharedStepClock, per_endpoint: int) -> None:
    """`per_endpoint` streamed chat requests through the router on each of broken, blippy and alpha (one
    route per endpoint, its one tier pinned with fallbacks off), flushed into the canary's database."""
    tags = ["broken", "blippy", "alpha"]
    raw = {"router": {"events_db": db, "events_path": str(tmp / "events.jsonl"), "savings_path": str(tmp / "s.jsonl"),
                      "publish_dir": str(tmp / "published"), "flush_interval_s": 3600, "first_chunk_budget_s": 3.0},
           "route": [{"model": f"chat-{t}", "tier": [{"base_url": sim.base_url, "model": MODEL,
                                                        "api_key_env": "SIM_KEY",
                                                        "provider": {"only": [t], "allow_fallbacks": False}}]}
                     for t in tags]}
    with start_router(parse_routes(raw), env={"SIM_KEY": sim.api_key}, clock=clock) as r, \
            httpx.Client(timeout=30) as client:
        for tag in tags:
            for _ in range(per_endpoint):
                with client.stream("POST", r.base_url + "/chat/completions",
                                   json={"model": f"chat-{tag}", "stream": True,
                                         "messages": [{"role": "user", "content": "Hello"}]}) as reply:
                    reply.read()
        flush_all(r.shell.batchers)


@pytest.fixture(scope="module")
def story(prefect_harness: None, sim: SimulatorChild, clock: SharedStepClock,
          tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from flows.round import canary_round
    from tasks.config import CanaryConfig

    tmp = tmp_path_factory.mktemp("suspicion")
    os.environ["OPENROUTER_API_KEY"] = sim.api_key
    ov = round_overrides(sim, tmp, MODEL, ttft_s=1.0, read_timeout_s=5.0, probe_budget_s=8.0,
                         languages=["en", "fr", "de"])
    cfg = apply_overrides(CanaryConfig(), ov)

    def run(**kw: Any) -> dict[str, Any]:
        return canary_round(model=MODEL, overrides=ov, **kw)

    first = run(round_ts=T0)
    clock.advance(timedelta(minutes=6))
    live_traffic(sim, cfg.db_path, tmp, clock, per_endpoint=25)
    clock.advance(timedelta(minutes=1))
    [watched] = watch_once(cfg, clock.now())
    confirmations = run_confirmations(watched, run, clock, before=T0 + timedelta(minutes=30))
    clock.advance(T0 + timedelta(minutes=13) - clock.now())
    [later] = watch_once(cfg, clock.now())
    return {"db": cfg.db_path, "first": first, "watched": watched, "confirmations": confirmations, "later": later,
            "cfg": cfg}


def test_the_router_counted_every_request_per_endpoint(story: dict[str, Any]) -> None:
    with store.open_store(story["db"], read_only=True) as con:
        rows = con.execute("SELECT tag, outcome, sum(requests)::INTEGER FROM live_requests WHERE quality IS NULL "
                           "GROUP BY ALL ORDER BY tag, outcome").fetchall()  # attempts (judged answers beside them)
    assert rows == [("alpha", "ok", 25), ("blippy", "http_5xx", 25), ("broken", "protocol_violation", 25)]


def test_live_failures_lead_to_a_confirmation_round_within_the_deadline(story: dict[str, Any]) -> None:
    assert story["first"]["decisions"] == [] and story["first"]["status"] == "complete"
    watched = story["watched"]
    assert [(s["tag"], s["signal"]) for s in watched["suspicions"]] == [
        ("blippy", "live_failure_rate"), ("broken", "live_failure_rate")]
    assert "live failures 25/25 (100%)" in watched["suspicions"][1]["evidence"]
    due = datetime.fromisoformat(watched["confirmation"]["due"])
    assert due - (T0 + timedelta(minutes=7)) <= timedelta(seconds=story["cfg"].suspect_confirm_after_s)
    assert watched["confirmation"]["only"] == ["blippy", "broken"]  # alpha (all ok) is not touched


def test_the_probes_suspend_the_broken_endpoint_before_the_next_round(story: dict[str, Any]) -> None:
    suspicion_round, follow_up = story["confirmations"]
    at = T0 + timedelta(minutes=7)
    assert suspicion_round["round_id"] == make_round_id(MODEL, at) and suspicion_round["partial"]
    assert suspicion_round["decisions"] == []  # one failing round is not enough
    assert follow_up["round_id"] == make_round_id(MODEL, at + timedelta(minutes=5))
    assert follow_up["decisions"] == ["suspend:broken"] and follow_up["ignore"] == ["broken"]
    with store.open_store(story["db"], read_only=True) as con:
        [(decided_at,)] = con.execute("SELECT decided_at FROM decisions WHERE action = 'suspend'").fetchall()
        statuses = con.execute("SELECT tag, status FROM endpoint_rounds WHERE round_id = ? ORDER BY tag",
                               [suspicion_round["round_id"]]).fetchall()
    assert decided_at < T0 + timedelta(minutes=30)  # before the next scheduled round
    assert statuses == [("blippy", "clean"), ("broken", "fail")]


def test_the_blip_is_cleared_and_changes_nothing(story: dict[str, Any]) -> None:
    assert story["later"]["resolved"] == 2 and story["later"]["suspicions"] == []
    with store.open_store(story["db"], read_only=True) as con:
        rows = con.execute("SELECT tag, signal, requests, failures, status, round_status, confirm_round_id "
                           "FROM suspicions ORDER BY tag").fetchall()
        blippy = con.execute("SELECT fail_streak, suspended_until FROM endpoint_state WHERE tag = 'blippy'"
                             ).fetchone()
        touched = con.execute("SELECT count(*) FROM decisions WHERE tag = 'blippy'").fetchone()
    rid = make_round_id(MODEL, T0 + timedelta(minutes=7))
    assert rows == [("blippy", "live_failure_rate", 25, 25, "cleared", "clean", rid),
                    ("broken", "live_failure_rate", 25, 25, "confirmed", "fail", rid)]
    assert blippy == (0, None) and touched == (0,)


def test_canary_at_shows_every_trigger_with_its_evidence(story: dict[str, Any]) -> None:
    from tasks.at import format_report, report_from_connection

    with store.open_store(story["db"], read_only=True) as con:
        report = report_from_connection(con, MODEL, T0 + timedelta(minutes=7), timedelta(hours=1))
    text = format_report(report)
    assert [(s["tag"], s["status"]) for s in report.suspicions] == [("blippy", "cleared"), ("broken", "confirmed")]
    assert "broken             live_failure_rate: live failures 25/25 (100%)" in text
    assert "-> confirmed by " + make_round_id(MODEL, T0 + timedelta(minutes=7)) + " (fail)" in text


def test_canary_status_shows_openrouters_figures_beside_the_state(story: dict[str, Any]) -> None:
    import json

    from typer.testing import CliRunner

    from provider_canary.cli.main import app

    db = story["db"]
    config = Path(db).with_name("canary.toml")
    config.write_text(f'models = ["{MODEL}"]\ndb_path = "{db}"\n', encoding="utf-8")
    out = CliRunner().invoke(app, ["status", "--config", str(config), "--json"])
    assert out.exit_code == 0, out.output
    rows = {r["tag"]: r for r in json.loads(out.output)["endpoints"]}
    assert rows["alpha"]["openrouter"]["uptime_last_5m"] == 99.9  # the simulator's listing (docs: 1a)
    assert rows["alpha"]["openrouter"]["latency_p50_ms"] == 620 and rows["broken"]["state"] == "suspended"
    text = CliRunner().invoke(app, ["status", "--config", str(config)])
    assert "OpenRouter uptime 5m/30m/1d" in text.output
    assert any(line.split()[1] == "alpha" and "99.9/99.8/99.7" in line for line in text.output.splitlines()
               if line.startswith(MODEL))
