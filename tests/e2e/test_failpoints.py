"""Crash a real round at every step boundary (SIGKILL through a named failpoint), restart, check the invariants.

For each failpoint of tasks/runtime/failpoints.py: round 1 runs normally (two broken endpoints fail once); round 2 runs
in a subprocess armed with the failpoint and dies by SIGKILL where it says; round 3 runs normally. Then:

* no probe that ended is lost: round 2 is complete, saved by its own process or landed by round 3 from the
  probes it kept beside its journal (tasks/spool/probes.py): the whole round when its probing had ended, a
  partial round of the endpoints whose probes had ended when it died mid-probe; every complete round holds
  exactly the attempts it counted;
* nothing is judged twice: each broken endpoint is suspended exactly once, by round 2 when round 2 probed it
  (saved before the crash, or landed late), else by round 3 (round 2's missing endpoint freezes the streak);
* every decision's alert reaches Slack exactly once (the Web API with a channel ID: a post whose fate the crash
  left unknown is found in the channel history, not posted again), and the outbox says sent;
* the published ignore list holds both suspensions; the killed run's round slot did not block round 3.

A round that dies before any probe ended is marked `crashed` with its step (tests/integration/test_round_liveness.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.fleet import Fleet, parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.runtime.failpoints import ENV, FAILPOINTS
from tests.support.rounds import GENEROUS_TTFT_S, round_overrides
from tests.support.slack_server import CHANNEL_ID, SlackServer

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MODEL = "acme/failpoint-model"
T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
BROKEN = {"kind": "invalid_json"}
#: Whether round 3 lands round 2 from the probes it kept (it died before its save committed), and as what.
LANDED_BY_NEXT = {"mid-probe": "partial", "after-probe": "whole", "inside-save": "whole", "after-save": None,
                  "after-publish": None, "during-delivery": None}


def fleet() -> Fleet:
    endpoints: list[dict[str, Any]] = [{"tag": t, "provider_name": t.capitalize()}
                                       for t in ("alpha", "beta", "gamma", "delta")]
    endpoints += [{"tag": t, "provider_name": t.capitalize(), "faults": [BROKEN]} for t in ("broken1", "broken2")]
    return parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})


@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(fleet()) as handle:
        yield handle


@pytest.fixture
def slack_channel() -> str:
    """A channel ID: the history lookup of a post of unknown fate needs one (channel names are not looked up)."""
    return CHANNEL_ID


def run_in_subprocess(model: str, at: datetime, overrides: dict[str, Any], failpoint: str) -> int:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, ENV: failpoint, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    args = json.dumps({"model": model, "round_ts": at.isoformat(), "overrides": overrides})
    proc = subprocess.run([sys.executable, "-m", "tests.support.round_proc", args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    return proc.returncode


@pytest.mark.parametrize("failpoint", FAILPOINTS)
def test_a_round_killed_at_each_step_loses_and_repeats_nothing(
    prefect_harness: None, sim: SimulatorHandle, slack: SlackServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, failpoint: str,
) -> None:
    from flows.round import canary_round

    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    ov = round_overrides(sim, tmp_path, MODEL, ttft_s=GENEROUS_TTFT_S, languages=["en"], min_hosts=2, ladder=["1d"])
    at = [T0 + timedelta(minutes=30 * i) for i in range(3)]

    assert canary_round(model=MODEL, round_ts=at[0], overrides=ov)["status"] == "complete"
    assert run_in_subprocess(MODEL, at[1], ov, failpoint) == -signal.SIGKILL
    third = canary_round(model=MODEL, round_ts=at[2], overrides=ov)
    assert third["status"] == "complete" and not third.get("skipped")

    with store.open_store(ov["db_path"], read_only=True) as con:
        rounds = {r["round_ts"]: r for r in store.round_rows(con, model=MODEL).to_dict("records")}
        counted = dict(con.execute("SELECT round_id, count(*) FROM attempts GROUP BY 1").fetchall())
        decisions = con.execute("SELECT tag, action, round_id FROM decisions ORDER BY tag").fetchall()
        alerts = store.alert_rows(con).to_dict("records")
        outcomes_twice = con.execute(
            "SELECT count(*) FROM (SELECT round_id, tag, contract FROM outcomes GROUP BY ALL HAVING count(*) > 1)"
        ).fetchone()

    r1, r2, r3 = (rounds[t] for t in at)
    for r in (r1, r2, r3):
        assert r["status"] == "complete" and r["attempt_count"] == counted[r["round_id"]] > 0, r
    landed = LANDED_BY_NEXT[failpoint]
    assert bool(r2["deferred"]) is (landed is not None), r2  # landed late by round 3, or saved by itself
    assert bool(r2["partial"]) is (landed == "partial"), r2
    if landed == "partial":  # it died mid-probe: the endpoints whose probes had ended (at least the first)
        assert 1 <= len(r2["endpoints"]) <= 6 and counted[r2["round_id"]] < counted[r1["round_id"]], r2
    else:
        assert sorted(r2["endpoints"]) == sorted(r1["endpoints"]), r2
    decided = {t: r2["round_id"] if t in r2["endpoints"] else r3["round_id"] for t in ("broken1", "broken2")}
    assert decisions == [(t, "suspend", decided[t]) for t in ("broken1", "broken2")]
    assert outcomes_twice == (0,)

    decision_alerts = [a for a in alerts if a["kind"] in ("suspend", "decisions")]
    assert len(decision_alerts) == len(set(decided.values())), decision_alerts  # one message per round deciding
    assert all(a["status"] == "sent" for a in decision_alerts), decision_alerts
    posted = Counter(m.alert_key for m in slack.messages)
    assert all(posted[a["key"]] == 1 for a in decision_alerts), posted
    assert all(n == 1 for n in posted.values()), posted
    assert sum(int(a["possible_duplicates"] or 0) for a in alerts) == 0

    published = json.loads((Path(ov["publish_dir"]) / "acme-failpoint-model.json").read_text())
    assert published["ignore"] == ["broken1", "broken2"]
    spool = Path(ov["db_path"] + ".spool")
    assert not list(spool.glob("*.journal.json")) and not list(spool.glob("*.probes.jsonl"))  # every trail consumed
