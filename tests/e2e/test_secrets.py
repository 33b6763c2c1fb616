"""Planted secrets never leave the process: not in DuckDB, the published JSON, Prefect artifacts, logs, flow
parameters or Slack messages.

The simulator's API key and the Slack bot token are planted values. Rounds run with faults (slow starts,
HTTP errors, a stream cut by an error chunk) so that failures, evidence excerpts and alerts are produced; then
a round with a wrong OpenRouter key (every probe 401) and flushes with a wrong Slack token (invalid_auth), so
that error paths are exercised too. Then every place is scanned. The scanner is tested first: it must find a
planted value wherever it is put, or the whole test proves nothing.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from simulator.fleet import parse_fleet
from simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.rounds import round_overrides
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e

MODEL = "acme/secret-model"
T0 = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
#: Two are shaped like real secrets (what the redaction patterns know), two are shapeless (only their
#: values are known), one of each kind per service, so neither kind of scrubbing alone passes the test.
KEY = "sk-or-v1-PLANTED" + secrets.token_hex(16)
TOKEN = "PLANTEDTOKEN" + secrets.token_hex(12)
WRONG_KEY = "PLANTEDKEY" + secrets.token_hex(16)
WRONG_TOKEN = "xoxb-PLANTED-" + secrets.token_hex(12)
FLEET = parse_fleet(
    {
        "models": [
            {
                "id": MODEL,
                "endpoints": [
                    {"tag": "alpha", "provider_name": "Alpha"},
                    {"tag": "beta", "provider_name": "Beta"},
                    {"tag": "gamma", "provider_name": "Gamma"},
                    {
                        "tag": "slowco",
                        "provider_name": "Slowco",
                        "faults": [{"kind": "slow_first_token", "delay_s": 1.5, "keepalive_s": 0.5}],
                    },
                    {
                        "tag": "errco",
                        "provider_name": "Errco",
                        "faults": [{"kind": "http_error_before_stream", "status": 502}],
                    },
                    {
                        "tag": "midco",
                        "provider_name": "Midco",
                        "faults": [{"kind": "midstream_error", "tokens": 2}],
                    },
                ],
            }
        ]
    }
)


# --- the scanner -----------------------------------------------------------------------------------------
def duckdb_texts(path: Path) -> Iterator[str]:
    """Every value of every table, as text (lists and structs included)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        assert tables, f"no tables in {path}"
        for table in tables:
            for row in con.execute(f'SELECT * FROM "{table}"').fetchall():
                for value in row:
                    if value is not None:
                        yield f"{table}: {value}"
    finally:
        con.close()


def file_texts(root: Path) -> Iterator[str]:
    for p in sorted(root.rglob("*")):
        if p.is_file():
            yield f"{p}: " + p.read_bytes().decode("utf-8", errors="replace")


def prefect_texts(model: str) -> Iterator[str]:
    """Artifacts, logs and parameters of every flow run of `model`, as the Prefect API holds them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterName,
        LogFilter,
        LogFilterFlowRunId,
    )

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_=model)))
        assert runs, f"no flow runs of {model}"
        ids = [r.id for r in runs]
        for run in runs:
            yield f"flow run {run.name}: {json.dumps(run.parameters, default=str)}"
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids))
        )
        for a in artifacts:
            yield f"artifact {a.key}: {a.description} {json.dumps(a.data, default=str)}"
        offset = 0
        while page := client.read_logs(
            LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)), limit=200, offset=offset
        ):
            yield from (f"log: {log.message}" for log in page)
            offset += len(page)


def slack_texts(slack: SlackServer) -> Iterator[str]:
    """What reached Slack: bodies of every request (the Authorization header is where a token belongs)."""
    for r in slack.requests:
        yield f"slack {r.path}: " + r.raw.decode("utf-8", errors="replace")


def leaks(needles: Iterable[str], texts: Iterable[str]) -> list[str]:
    found = []
    for text in texts:
        for needle in needles:
            if needle in text:
                at = text.index(needle)
                found.append(text[max(0, at - 120) : at + 40])
    return found


@pytest.mark.integration
def test_the_scanner_finds_a_planted_secret_everywhere(tmp_path: Path) -> None:
    key = WRONG_KEY
    db = tmp_path / "planted.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t (id INTEGER, notes VARCHAR[], meta STRUCT(k VARCHAR))")
    con.execute("INSERT INTO t VALUES (1, ['x', ?], {'k': 'y'})", [f"Bearer {key}"])
    con.close()
    (tmp_path / "pub").mkdir()
    (tmp_path / "pub" / "m.json").write_text(json.dumps({"note": key}), encoding="utf-8")
    assert leaks([key], duckdb_texts(db))
    assert leaks([key], file_texts(tmp_path / "pub"))
    assert leaks([key], [f"... {key} ..."])
    assert not leaks([key], [key[:-1]])
    with SlackServer(token="t") as slack:
        import httpx

        httpx.post(slack.api_url + "chat.postMessage", json={"channel": "#c", "text": key})
        assert leaks([key], slack_texts(slack))


def _capture_all_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Prefect configures logging once per process (dictConfig on the root logger), which drops caplog's
    handler if it happens during the test: configure it first, then make sure caplog listens."""
    import logging

    from prefect.logging.configuration import setup_logging

    setup_logging()
    root = logging.getLogger()
    if caplog.handler not in root.handlers:
        root.addHandler(caplog.handler)
    caplog.set_level(logging.DEBUG)
    for name in ("prefect", "canary", "tasks", "flows", "httpx", "slack_sdk"):  # the suite runs at WARNING
        caplog.set_level(logging.DEBUG, logger=name)


# --- the run ---------------------------------------------------------------------------------------------
@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(FLEET, api_key=KEY) as handle:
        yield handle


def _overrides(sim: SimulatorHandle, tmp_path: Path) -> dict[str, Any]:
    return round_overrides(sim, tmp_path, MODEL, ttft_s=1, languages=["en", "de"], min_hosts=2)


def test_planted_secrets_appear_nowhere(
    prefect_harness: None,
    sim: SimulatorHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from flows.round import canary_round
    from tasks.alerts import SlackSettings
    from tasks.delivery import deliver_outbox

    key, token, wrong_key, wrong_token = KEY, TOKEN, WRONG_KEY, WRONG_TOKEN
    needles = [key, token, wrong_key, wrong_token]
    ov = _overrides(sim, tmp_path)
    _capture_all_logs(caplog)
    with SlackServer(token=token) as slack:
        monkeypatch.setenv("OPENROUTER_API_KEY", key)
        monkeypatch.setenv("SLACK_BOT_TOKEN", token)
        monkeypatch.setenv("SLACK_CHANNEL", "#canary-admins")
        monkeypatch.setenv("SLACK_API_URL", slack.api_url)
        for i in range(2):  # two failing rounds: suspensions with evidence excerpts go to Slack
            canary_round(model=MODEL, round_ts=T0 + timedelta(minutes=30 * i), overrides=ov)
        assert len(slack.messages) >= 1, "the faults must have produced alerts"

        monkeypatch.setenv("OPENROUTER_API_KEY", wrong_key)  # every probe: 401 "User not found."
        wrong_ts = T0 + timedelta(minutes=60)
        raised: list[str] = []
        try:
            canary_round(model=MODEL, round_ts=wrong_ts, overrides=ov)
        except Exception as e:  # whether the round fails or lands 401s, its error must not carry the key
            raised += [str(e), repr(e)]
        with store.open_store(ov["db_path"], read_only=True) as con:
            statuses = {
                r[0]
                for r in con.execute(
                    "SELECT DISTINCT a.http_status FROM attempts a JOIN rounds r USING (round_id)"
                    " WHERE r.round_ts = ?",
                    [wrong_ts],
                ).fetchall()
            }
        assert raised or statuses == {401}, (raised, statuses)

        # A wrong Slack token: the alerts of a third round fail with invalid_auth and stay in the outbox.
        monkeypatch.setenv("OPENROUTER_API_KEY", key)
        monkeypatch.setenv("SLACK_BOT_TOKEN", wrong_token)
        sim.set_fleet(
            parse_fleet(
                {
                    "models": [
                        {
                            "id": MODEL,
                            "endpoints": [
                                {"tag": t, "provider_name": t.capitalize()}
                                for t in ("alpha", "beta", "gamma", "slowco")
                            ],
                        }
                    ]
                }
            )
        )
        for i in (3, 4):  # slowco back to health: restore alerts, refused by Slack (wrong token)
            canary_round(model=MODEL, round_ts=T0 + timedelta(minutes=30 * i), overrides=ov)
        summary = deliver_outbox(ov["db_path"], SlackSettings.from_env(), T0 + timedelta(hours=3))
        with store.open_store(ov["db_path"]) as con:
            errors = list(store.alert_rows(con, status="pending")["last_error"].dropna())
        assert summary.failed >= 1 and any("invalid_auth" in e for e in errors), (summary, errors)

        captured = capsys.readouterr()
        places = {
            "duckdb": list(duckdb_texts(Path(ov["db_path"]))),
            "snapshot": list(duckdb_texts(store.snapshot_path(ov["db_path"]))),
            "published": list(file_texts(Path(ov["publish_dir"]))),
            "prefect": list(prefect_texts(MODEL)),
            "slack": list(slack_texts(slack)),
            "logs": [f"{r.name}: {r.getMessage()} {r.exc_text or ''}" for r in caplog.records],
            "stdout/stderr": [captured.out, captured.err],
            "errors": raised,
        }
    for where, texts in places.items():
        assert texts or where in ("stdout/stderr", "errors"), f"nothing was collected from {where}"
    found = {where: leaks(needles, texts) for where, texts in places.items()}
    assert found == {where: [] for where in places}
    # The scan was not vacuous: what we collected is where such a secret would have shown up.
    assert any("suspend" in t for t in places["slack"])
    assert any("invalid_auth" in t for t in places["duckdb"])
    assert any(t.startswith("artifact round-") for t in places["prefect"])
    assert any(t.startswith("log: ") for t in places["prefect"])
