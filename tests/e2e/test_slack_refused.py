"""A Slack that refuses an alert for good, end to end: real `canary-round` flow runs (shared Prefect harness)
against the simulator, the DuckDB outbox, the real slack-sdk WebClient and the local Slack server refusing the
round's suspension alert as `msg_too_long` or `invalid_blocks` (blocks, then the plain-text resend).

The operator still hears within the same round (one interval): the refused alert is marked `failed`, an alert
about it (short plain text) is posted, `canary status` says it in one line, and later rounds never post the
refused alert again. On main the alert stayed `pending` and was retried every round, silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from provider_canary.cli.main import app
from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.rounds import round_overrides
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e

MODEL = "acme/refused-model"
T0 = datetime(2026, 5, 6, 6, 0, tzinfo=UTC)


@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    endpoints: list[dict[str, Any]] = [{"tag": t, "provider_name": t.capitalize()} for t in ("alpha", "beta", "gamma")]
    endpoints.append({"tag": "broken", "provider_name": "Broken", "faults": [{"kind": "invalid_json"}]})
    with start_simulator(parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})) as handle:
        yield handle


@pytest.mark.parametrize("refusal", [("msg_too_long", 1), ("invalid_blocks", 2)],
                         ids=["msg_too_long", "invalid_blocks"])
def test_a_refused_alert_reaches_the_operator_within_the_round_and_is_never_retried(
    prefect_harness: None, sim: SimulatorHandle, slack: SlackServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, refusal: tuple[str, int],
) -> None:
    from flows.round import canary_round

    error, refusals = refusal
    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    ov = round_overrides(sim, tmp_path, MODEL, ttft_s=2, languages=["en"], min_hosts=2, ladder=["1d"])
    at = [T0 + timedelta(minutes=30 * i) for i in range(3)]

    assert canary_round(model=MODEL, round_ts=at[0], overrides=ov)["status"] == "complete"
    assert slack.messages == []
    slack.error_next(refusals, error)  # the suspension alert of round 2 is refused for good
    assert canary_round(model=MODEL, round_ts=at[1], overrides=ov)["status"] == "complete"

    with store.open_store(ov["db_path"], read_only=True) as con:
        rows = {r["kind"]: r for r in store.alert_rows(con).to_dict("records")}
    refused, notice = rows["suspend"], rows["delivery_failed"]
    assert refused["status"] == "failed" and error in refused["last_error"]
    assert notice["status"] == "sent"
    [posted] = [m.body or {} for m in slack.messages]  # within the round that raised it
    assert "could not be posted" in posted["text"] and error in posted["text"] and "suspend" in posted["text"]

    cfg = tmp_path / "canary.toml"
    cfg.write_text(f'models = ["{MODEL}"]\ndb_path = "{ov["db_path"]}"\npublish_dir = "{ov["publish_dir"]}"\n')
    result = CliRunner().invoke(app, ["status", "--config", str(cfg)])
    assert result.exit_code == 0, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("alerts refused by Slack for good")]
    assert ": 1;" in line and error in line

    requests_with_key = Counter(m.alert_key for m in slack.requests)[refused["key"]]
    assert requests_with_key == refusals
    assert canary_round(model=MODEL, round_ts=at[2], overrides=ov)["status"] == "complete"
    assert Counter(m.alert_key for m in slack.requests)[refused["key"]] == refusals  # never retried
