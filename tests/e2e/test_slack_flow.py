"""Slack on transitions, end to end: real `canary-round` flow runs (shared Prefect harness) against the
simulator, alerts through the DuckDB outbox and the real slack-sdk WebClient to the local Slack server (the channel
given by its ID, so a post of unknown fate is looked up, never blindly posted again).

One message per model and round, none on steady state; a suspension's later events in that message's thread,
the message rewritten to say how it ended; a Slack outage (connection refused) delays the round's message to a
later round, a post Slack wrote and then answered 500 is found and never posted again, a 429 with Retry-After is
waited out within the delivery. Time is compressed: rounds are 30 simulated minutes apart, a 1 s TTFT threshold
against a 1.5 s slow first token, a 1 h ladder.

Transitions covered: suspend, floor_blocked, expire, restore (enforce), would_suspend (observe), lift (admin
command), probe_weak and pin_mismatch (round findings).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.fleet import Fleet, parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.rounds import round_overrides
from tests.support.slack_server import CHANNEL_ID, SlackServer

pytestmark = pytest.mark.e2e

MODEL = "acme/slack-model"
CHANNEL = CHANNEL_ID
T0 = datetime(2026, 5, 4, 6, 0, tzinfo=UTC)
#: 4 s at time_scale 0.1 against a 2 s ttft_s: fails whatever the load; healthy first tokens (30 ms) keep ~2 s
SLOW = {"kind": "slow_first_token", "delay_s": 40.0, "keepalive_s": 5.0}
TIME_SCALE = 0.1
BAD_GATEWAY = {"kind": "http_error_before_stream", "status": 502}


def fleet(**faults: dict[str, Any]) -> Fleet:
    """alpha, beta, gamma healthy; driftco and slowco with the given faults (none = healthy)."""
    endpoints = [{"tag": t, "provider_name": t.capitalize()} for t in ("alpha", "beta", "gamma")]
    for tag in ("driftco", "slowco"):
        ep: dict[str, Any] = {"tag": tag, "provider_name": tag.capitalize()}
        if tag in faults:
            ep["faults"] = [faults[tag]]
        endpoints.append(ep)
    return parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})


@pytest.fixture
def slack_channel() -> str:
    """The channel by its ID (tests/e2e/conftest.py's `slack` sets it): its history can be read."""
    return CHANNEL_ID


@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(fleet(driftco=SLOW, slowco=SLOW), time_scale=TIME_SCALE) as handle:
        yield handle


@pytest.fixture
def overrides(monkeypatch: pytest.MonkeyPatch, sim: SimulatorHandle, tmp_path: Path) -> dict[str, Any]:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    return round_overrides(
        sim,
        tmp_path,
        MODEL,
        ttft_s=2,
        languages=["en"],
        fail_rounds=2,
        restore_rounds=1,
        min_hosts=4,
        ladder=["1h"],
    )


class Rounds:
    """Runs rounds and hands back the alert keys Slack accepted since the previous call."""

    def __init__(self, overrides: dict[str, Any], slack: SlackServer) -> None:
        self.overrides, self.slack, self._seen = overrides, slack, 0

    def run(self, at: datetime, **extra: Any) -> dict[str, Any]:
        from flows.round import canary_round

        return canary_round(model=MODEL, round_ts=at, overrides={**self.overrides, **extra})

    def new_messages(self) -> list[str]:
        accepted = self.slack.messages
        keys = [m.alert_key or "?" for m in accepted[self._seen :]]
        self._seen = len(accepted)
        return keys

    def decisions(self, at: datetime) -> dict[str, str]:
        """tag -> action of the decisions made by the round at `at`, by their alert keys."""
        with store.open_store(self.overrides["db_path"], read_only=True) as con:
            rows = con.execute(
                "SELECT d.decision_id, d.action, d.tag FROM decisions d JOIN rounds r USING (round_id)"
                " WHERE r.round_ts = ? ORDER BY d.tag",
                [at],
            ).fetchall()
        return {f"{action}:{tag}": key for key, action, tag in rows}

    def outbox(self) -> dict[str, dict[str, Any]]:
        with store.open_store(self.overrides["db_path"], read_only=True) as con:
            df = store.alert_rows(con)
        return {str(r["key"]): {str(k): v for k, v in r.items()} for r in df.to_dict("records")}


def _text(slack: SlackServer, key: str) -> str:
    [msg] = [m for m in slack.messages if m.alert_key == key]
    body = msg.body or {}
    blocks = body.get("blocks")
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    assert blocks and all(isinstance(b, dict) and b.get("type") for b in blocks), "Block Kit blocks"
    assert body.get("channel") == CHANNEL
    return str(body.get("text", ""))


def _ts(slack: SlackServer, key: str) -> str | None:
    [msg] = [m for m in slack.messages if m.alert_key == key]
    return msg.ts


def _thread_of(slack: SlackServer, key: str) -> str | None:
    [msg] = [m for m in slack.messages if m.alert_key == key]
    return (msg.body or {}).get("thread_ts")


def _updates_of(slack: SlackServer, ts: str | None) -> list[str]:
    return [str((u.body or {}).get("text")) for u in slack.updates if (u.body or {}).get("ts") == ts]


def test_one_message_per_round_threads_and_outages_lose_or_repeat_nothing(
    prefect_harness: None, sim: SimulatorHandle, slack: SlackServer, overrides: dict[str, Any]
) -> None:
    r = Rounds(overrides, slack)
    at = [T0 + timedelta(minutes=30 * i) for i in range(6)]

    # R1: both slow endpoints fail once: no transition, no message.
    r.run(at[0])
    assert r.decisions(at[0]) == {} and r.new_messages() == []
    r2_msg = _r2_one_message_for_two_while_slack_is_down(r, slack, at[1])
    _r3_slack_back_the_r2_message_arrives_once(r, slack, at[2], r2_msg)
    r4_msg, expired = _r4_expiry_in_r2s_thread_a_written_post_never_again(r, sim, slack, at[3], r2_msg)
    restored = _r5_restore_in_r4s_thread_after_a_429(r, sim, slack, at[4], r4_msg)
    # R6: steady: nothing.
    r.run(at[5])
    assert r.decisions(at[5]) == {} and r.new_messages() == []
    _every_message_went_out_once(r, slack, overrides, r2_msg, r4_msg, expired, restored)


def _r2_one_message_for_two_while_slack_is_down(r: Rounds, slack: SlackServer, at: datetime) -> str:
    """R2: driftco suspended; slowco held back by the floor (min_hosts 4): ONE message for the two. Slack is down:
    the message stays pending (its key returned)."""
    slack.down()
    r.run(at)
    r2 = r.decisions(at)
    assert sorted(r2) == ["floor_blocked:slowco", "suspend:driftco"]
    assert r.new_messages() == []
    pending = r.outbox()
    [r2_msg] = [k for k in pending if k.startswith("decisions|")]
    assert pending[r2_msg]["status"] == "pending" and pending[r2_msg]["attempts"] == 1
    return r2_msg


def _r3_slack_back_the_r2_message_arrives_once(r: Rounds, slack: SlackServer, at: datetime, r2_msg: str) -> None:
    """R3: Slack is back. The R2 message arrives now, exactly once; R3 itself is steady (no message)."""
    slack.up()
    r.run(at)
    assert r.decisions(at) == {}
    assert r.new_messages() == [r2_msg]
    text = _text(slack, r2_msg)
    assert text.startswith(f"{MODEL}: 1 suspended, 1 held back by the floor\n")
    assert "driftco" in text and "ttft" in text and f"canary lift driftco --model {MODEL}" in text
    assert f"canary exclude add slowco --model {MODEL}" in text
    assert "/runs/flow-run/" in text and "Runbook: `docs/operations.md#" in text  # the round's flow run, the runbook


def _r4_expiry_in_r2s_thread_a_written_post_never_again(
    r: Rounds, sim: SimulatorHandle, slack: SlackServer, at: datetime, r2_msg: str
) -> tuple[str, str]:
    """R4: driftco's suspension expires (it now answers 502: transport, frozen, not suspended again), which frees
    the floor: slowco is suspended. The expiry goes in the R2 message's thread, slowco in R4's own message.
    Slack writes the first post and answers 500: it is found in the channel, never posted again. Returns the keys
    of R4's message and of the expiry."""
    sim.set_fleet(fleet(driftco=BAD_GATEWAY, slowco=SLOW))
    slack.write_then_fail_next(1, status=500)
    r.run(at)
    r4 = r.decisions(at)
    assert sorted(r4) == ["expire:driftco", "suspend:slowco"]
    arrived = r.new_messages()
    [r4_msg] = [k for k in arrived if k.startswith("decisions|")]
    [expired] = [k for k in arrived if k.startswith("thread|")]
    assert len(arrived) == 2 and _thread_of(slack, expired) == _ts(slack, r2_msg) and _thread_of(slack, r4_msg) is None
    assert f"Suspension expired: driftco on {MODEL}" in _text(slack, expired)
    [r2_now] = _updates_of(slack, _ts(slack, r2_msg))  # the parent says how it ended
    assert "Since then (in the thread):" in r2_now and f"Suspension expired: driftco on {MODEL}" in r2_now
    return r4_msg, expired


def _r5_restore_in_r4s_thread_after_a_429(
    r: Rounds, sim: SimulatorHandle, slack: SlackServer, at: datetime, r4_msg: str
) -> str:
    """R5: everyone healthy: slowco restored, in R4's thread. Slack answers 429 (Retry-After 1): waited out within
    the delivery, so it arrives in this round, not the next one. Returns the restore's key."""
    sim.set_fleet(fleet())
    slack.rate_limit_next(1, retry_after=1)
    r.run(at)
    assert list(r.decisions(at)) == ["restore:slowco"]
    [restored] = r.new_messages()
    assert _thread_of(slack, restored) == _ts(slack, r4_msg)
    [r4_now] = _updates_of(slack, _ts(slack, r4_msg))
    assert f"Restored: slowco on {MODEL}" in r4_now
    return restored


def _every_message_went_out_once(r: Rounds, slack: SlackServer, overrides: dict[str, Any], r2_msg: str, r4_msg: str,
                                 expired: str, restored: str) -> None:
    """Every message went out exactly once, and every alert in the outbox is sent, none possibly twice; each
    suspension names its message."""
    keys = [m.alert_key or "?" for m in slack.messages]
    assert Counter(keys).most_common(1)[0][1] == 1
    assert sorted(keys) == sorted([r2_msg, r4_msg, expired, restored])
    box = r.outbox()
    assert sorted(box) == sorted(keys)
    assert {row["status"] for row in box.values()} == {"sent"}
    assert {int(row["possible_duplicates"] or 0) for row in box.values()} == {0}
    for key in keys:
        assert "What to do:" in _text(slack, key)
    with store.open_store(overrides["db_path"], read_only=True) as con:
        threads = dict(con.execute("SELECT action || ':' || tag, thread_key FROM decisions"
                                   " WHERE action IN ('suspend', 'expire', 'restore')").fetchall())
    assert threads == {"suspend:driftco": r2_msg, "expire:driftco": r2_msg, "suspend:slowco": r4_msg,
                       "restore:slowco": r4_msg}


def test_observe_mode_says_would_suspend_once(
    prefect_harness: None, slack: SlackServer, overrides: dict[str, Any]
) -> None:
    r = Rounds({**overrides, "mode": "observe", "min_hosts": 2}, slack)
    for i in range(3):
        r.run(T0 + timedelta(minutes=30 * i))
    keys = r.new_messages()
    kinds = {row["kind"] for row in r.outbox().values()}
    assert kinds == {"would_suspend"} and len(keys) == 1  # driftco and slowco, in one message
    text = _text(slack, keys[0])
    assert "canary mode enforce" in text and "canary exclude add" in text
    assert "driftco" in text and "slowco" in text


def test_admin_lift_is_announced_once(
    prefect_harness: None, slack: SlackServer, overrides: dict[str, Any], tmp_path: Path
) -> None:
    from provider_canary.cli.admin import lift_command

    cfg = {**overrides, "min_hosts": 3}  # one suspension only: slowco is held back by the floor
    config = tmp_path / "canary.toml"
    config.write_text(
        "".join(f"{k} = {json.dumps(v)}\n" for k, v in cfg.items() if k != "db_path"), encoding="utf-8"
    )
    r = Rounds(cfg, slack)
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    r.run(now - timedelta(minutes=45))
    r.run(now - timedelta(minutes=15))
    [suspended] = r.new_messages()  # the round's decisions, one message
    assert "driftco" in _text(slack, suspended)

    lift_command(
        tag="driftco", reason="false positive", model=MODEL, who="tester", config=config, db=cfg["db_path"]
    )
    lifted = r.new_messages()
    assert len(lifted) == 1
    assert r.outbox()[lifted[0]]["kind"] == "lift"
    assert "driftco" in _text(slack, lifted[0])
    assert _thread_of(slack, lifted[0]) == _ts(slack, suspended)  # in the suspension's thread
    [now_text] = _updates_of(slack, _ts(slack, suspended))
    assert f"Suspension lifted: driftco on {MODEL}" in now_text

    r.run(now + timedelta(minutes=15))  # driftco still fails, but a lift spends the streak: no message
    assert r.new_messages() == []


def test_round_findings_probe_weak_and_pin_mismatch(
    prefect_harness: None, sim: SimulatorHandle, slack: SlackServer, overrides: dict[str, Any]
) -> None:
    sim.set_fleet(fleet(slowco={"kind": "pin_not_honoured"}))
    r = Rounds({**overrides, "refusal_controls": ["driftco"]}, slack)  # a control that does not filter
    r.run(T0)
    keys = r.new_messages()
    box = r.outbox()
    assert sorted(box[k]["kind"] for k in keys) == ["pin_mismatch", "probe_weak"]
    pin = next(k for k in keys if box[k]["kind"] == "pin_mismatch")
    assert box[pin]["tag"] == "slowco" and "canary exclude add slowco" in _text(slack, pin)
    # The same findings next round are not a transition: nothing new is sent.
    r.run(T0 + timedelta(minutes=30))
    assert [
        box_kind
        for k in r.new_messages()
        if (box_kind := r.outbox()[k]["kind"]) in ("pin_mismatch", "probe_weak")
    ] == []


def test_without_slack_the_alerts_are_in_the_run_log(
    prefect_harness: None, overrides: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Slack configured: every alert is written to the flow run's log (what the Prefect UI shows)."""
    import logging

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    from flows.round import canary_round

    for var in ("SLACK_BOT_TOKEN", "SLACK_CHANNEL", "SLACK_API_URL", "SLACK_WEBHOOK_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(logging.getLogger("prefect"), "level", logging.INFO)  # the suite runs at WARNING
    ov = {**overrides, "fail_rounds": 1}
    state = canary_round(model=MODEL, round_ts=T0, overrides=ov, return_state=True)
    run_id = state.state_details.flow_run_id
    assert run_id is not None
    with store.open_store(overrides["db_path"], read_only=True) as con:
        kinds = sorted(store.alert_rows(con)["kind"])
    assert kinds == ["decisions"]  # min_hosts 4: driftco suspended, slowco held back, in one message

    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()  # ship the batched run logs now
    with get_client(sync_client=True) as client:
        logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])), limit=200)
    lines = [log.message for log in logs if "Slack not configured" in log.message]
    assert any(f"{MODEL}: 1 suspended, 1 held back by the floor" in m and "driftco" in m for m in lines), \
        [log.message for log in logs]
