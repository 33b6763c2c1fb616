"""The dead-man alert end to end: real rounds landed at simulated times, the `canary-deadman` flow checking at
simulated times, alerts through the outbox and the real slack-sdk to the local Slack server.

One alert per silence episode (a repeated check says nothing new), none while rounds are recent, a new one for
the next silence; the round that ends a silence tells too, under the same key (so at most once in all).
(The file is not named test_deadman.py: tests/unit/test_deadman.py holds the pure check, and test modules
share one namespace.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.rounds import GENEROUS_TTFT_S, round_overrides
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e

MODEL = "acme/deadman-model"
QUIET = "acme/never-ran"
T0 = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)
FLEET = parse_fleet(
    {
        "models": [
            {
                "id": MODEL,
                "endpoints": [
                    {"tag": "alpha", "provider_name": "Alpha"},
                    {"tag": "beta", "provider_name": "Beta"},
                ],
            }
        ]
    }
)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET) as handle:
        yield handle


@pytest.fixture
def overrides(monkeypatch: pytest.MonkeyPatch, sim: SimulatorHandle, tmp_path: Path) -> dict[str, Any]:
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    return round_overrides(sim, tmp_path, MODEL, languages=["en"], interval_min=30)


def _round(overrides: dict[str, Any], at: datetime) -> dict[str, Any]:
    from flows.round import canary_round

    return canary_round(model=MODEL, round_ts=at, overrides=overrides)


def _check(overrides: dict[str, Any], at: datetime) -> dict[str, Any]:
    from flows.deadman import canary_deadman

    return canary_deadman(now=at, overrides=overrides)


def _deadman_messages(slack: SlackServer) -> list[str]:
    """Alert keys of the dead-man messages Slack accepted, in order."""
    keys = [m.alert_key for m in slack.messages]
    return [k for k in keys if k and k.startswith("deadman|")]


def _key(model: str, last: datetime | None) -> str:
    return f"deadman|{model}|{last.isoformat() if last else 'never'}"


def test_one_alert_per_silence_episode_and_none_when_recent(
    prefect_harness: None, overrides: dict[str, Any], slack: SlackServer
) -> None:
    assert _round(overrides, T0)["endpoints"] == 2

    # Recent: within two intervals (60 min) of the last complete round.
    assert _check(overrides, T0 + timedelta(minutes=30))["overdue"] == []
    assert _check(overrides, T0 + timedelta(minutes=60))["overdue"] == []
    assert _deadman_messages(slack) == []

    # Silent for more than two intervals: one alert, and the check says so.
    first = _check(overrides, T0 + timedelta(minutes=61))
    assert first["overdue"] == [MODEL] and first["sent"] == 1
    assert _deadman_messages(slack) == [_key(MODEL, T0)]
    text = slack.messages[-1].body["text"]  # type: ignore[index]
    assert f"No canary round completed: {MODEL}" in text and "canary run --model" in text

    # The same silence, checked again later: nothing new.
    _check(overrides, T0 + timedelta(minutes=75))
    _check(overrides, T0 + timedelta(minutes=89))
    assert _deadman_messages(slack) == [_key(MODEL, T0)]

    # A round lands: the silence is over, and the round's own notice of it repeats nothing.
    _round(overrides, T0 + timedelta(minutes=90))
    assert _check(overrides, T0 + timedelta(minutes=100))["overdue"] == []
    assert _deadman_messages(slack) == [_key(MODEL, T0)]

    # The next silence is a new episode: a new alert.
    _check(overrides, T0 + timedelta(minutes=151))
    _check(overrides, T0 + timedelta(minutes=170))
    assert _deadman_messages(slack) == [_key(MODEL, T0), _key(MODEL, T0 + timedelta(minutes=90))]

    with store.open_store(overrides["db_path"], read_only=True) as con:
        rows = store.alert_rows(con, kind="deadman")
    assert list(rows["status"]) == ["sent", "sent"]
    assert list(rows["attempts"]) == [1, 1]


def test_a_model_that_never_completed_a_round_is_watched_from_the_first_check(
    prefect_harness: None, overrides: dict[str, Any], slack: SlackServer
) -> None:
    cfg = {**overrides, "models": [QUIET]}
    assert _check(cfg, T0)["overdue"] == []  # starts watching
    assert _check(cfg, T0 + timedelta(minutes=60))["overdue"] == []
    assert _check(cfg, T0 + timedelta(minutes=61))["overdue"] == [QUIET]
    _check(cfg, T0 + timedelta(minutes=90))
    assert _deadman_messages(slack) == [_key(QUIET, None)]


def test_a_slack_outage_delays_the_alert_and_the_next_check_sends_it_once(
    prefect_harness: None, overrides: dict[str, Any], slack: SlackServer
) -> None:
    _round(overrides, T0)
    slack.down()
    out = _check(overrides, T0 + timedelta(minutes=70))
    assert out["overdue"] == [MODEL] and out["sent"] == 0 and out["failed"] == 1
    slack.up()
    again = _check(overrides, T0 + timedelta(minutes=85))
    assert again["sent"] == 1 and again["queued"] == 0  # the same alert, from the outbox
    _check(overrides, T0 + timedelta(minutes=100))
    assert _deadman_messages(slack) == [_key(MODEL, T0)]


def test_the_round_that_ends_a_silence_reports_it_when_nobody_else_did(
    prefect_harness: None, overrides: dict[str, Any], slack: SlackServer
) -> None:
    _round(overrides, T0)
    _round(overrides, T0 + timedelta(minutes=30))
    assert _deadman_messages(slack) == []  # a normal interval
    _round(overrides, T0 + timedelta(minutes=150))  # no dead-man flow ran during the 2 h gap
    assert _deadman_messages(slack) == [_key(MODEL, T0 + timedelta(minutes=30))]
    alert = slack.messages[-1].body or {}
    blocks = alert.get("blocks")
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    assert blocks, "the dead-man alert is a Block Kit message"
    _check(overrides, T0 + timedelta(minutes=160))  # the flow agrees: not overdue any more, nothing new
    _round(overrides, T0 + timedelta(minutes=180))
    assert _deadman_messages(slack) == [_key(MODEL, T0 + timedelta(minutes=30))]


def test_an_unreadable_database_still_reaches_slack_once_a_day(
    prefect_harness: None, slack: SlackServer, tmp_path: Path
) -> None:
    """The outbox lives in the database: when the file is garbage, the dead-man posts straight to Slack, once a
    day (a marker next to the database remembers), and the check itself does not crash."""
    from flows.deadman import canary_deadman

    db = tmp_path / "canary.duckdb"
    db.write_bytes(b"this is not a duckdb file\x00" * 4096)
    first = canary_deadman(db_path=str(db), now=T0, overrides={"models": [MODEL]})
    again = canary_deadman(db_path=str(db), now=T0 + timedelta(minutes=15), overrides={"models": [MODEL]})
    tomorrow = canary_deadman(db_path=str(db), now=T0 + timedelta(days=1), overrides={"models": [MODEL]})
    assert first["store_unreadable"] and (first["sent"], again["sent"], tomorrow["sent"]) == (1, 0, 1)
    keys = [m.alert_key for m in slack.messages]
    assert keys == [f"store_unreadable|{db}|{T0:%Y-%m-%d}", f"store_unreadable|{db}|{T0 + timedelta(days=1):%Y-%m-%d}"]


def test_a_catalog_that_empties_is_alerted_once(
    prefect_harness: None, sim: SimulatorHandle, slack: SlackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.round import canary_round

    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    ov = round_overrides(sim, tmp_path, MODEL, languages=["en"], ttft_s=GENEROUS_TTFT_S)
    assert canary_round(model=MODEL, round_ts=T0, overrides=ov)["endpoints"] == 2
    import tasks.probe.discover

    # OpenRouter answers 200 with an empty list (the simulator cannot serve a model without endpoints).
    empty_listing = {"data": {"endpoints": []}}
    monkeypatch.setattr(tasks.probe.discover, "fetch_endpoints",
                        lambda client, base, key, model: tasks.probe.discover.parse_endpoints(model, empty_listing))
    empty = [canary_round(model=MODEL, round_ts=T0 + timedelta(minutes=30 * i), overrides=ov) for i in (1, 2)]
    assert [r["endpoints"] for r in empty] == [0, 0]
    kinds = [json.loads(json.dumps(m.body or {})).get("metadata", {}).get("event_payload", {}).get("kind")
             for m in slack.messages]
    assert kinds.count("empty_catalog") == 1, kinds
