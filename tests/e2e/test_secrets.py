"""Planted secrets never leave the process: not in DuckDB, the snapshot, the published JSON, Prefect
artifacts, flow-run parameters and states, logs, stdout/stderr, or the Slack double's messages.

Secrets of several shapes are planted: an OpenRouter-shaped key (the simulator's), a shapeless wrong key, a
shapeless and an `xoxb-` Slack token, a shapeless webhook URL known only from a Prefect Secret block, and a
password in `base_url`'s userinfo. An echoing upstream (tests/support/echo_upstream.py, a proxy in front of
the simulator) sends every one of them back in reply text, as 15-character prefixes cut with an ellipsis, in
an HTTP error body, in a mid-stream error chunk, as the `provider` name and in response headers. Rounds also
run with simulator faults (slow starts, HTTP errors, a stream cut by an error chunk) so that failures,
evidence excerpts and alerts are produced; then a round with a wrong OpenRouter key (401s), flushes with a
wrong Slack token (invalid_auth), a round through `canary run`'s code, and two `canary run` processes given
a base URL with the gateway's password (refused by config validation, which must not show it). The echoed
texts also carry derived forms (base64, HTTP Basic, URL-encoded) and the request's own Authorization header.
Then every sink is scanned for every secret, its 15-character prefix and its derived forms; `-s` prints the
sink x secret table. The scanner is tested first:
it must find a planted value wherever it is put, or the whole test proves nothing.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
import pytest

from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tests.support.echo_upstream import ECHO_TAGS, EchoUpstream, cut
from tests.support.rounds import round_overrides
from tests.support.secret_scan import duckdb_texts, file_texts, leaks, prefect_texts, slack_texts
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e

MODEL = "acme/secret-model"
T0 = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]
#: The planted secrets by shape: shaped ones (the redaction shapes know them) and shapeless ones (only their
#: values are known: environment, Secret block, URL userinfo), so neither kind of scrubbing alone passes.
KEY = "sk-or-v1-PLANTED" + secrets.token_hex(16)
TOKEN = "PLANTEDTOKEN" + secrets.token_hex(12)
WRONG_KEY = "PLANTEDKEY" + secrets.token_hex(16)
WRONG_TOKEN = "xoxb-PLANTED-" + secrets.token_hex(12)
BLOCK_WEBHOOK = "http://127.0.0.1:9/services/PLANTEDBLOCK" + secrets.token_hex(12)
PASSWORD = "PLANTEDPW" + secrets.token_hex(8)
WRONG_PASSWORD = "PLANTEDWRONGPW" + secrets.token_hex(8)
USER = "canary-gw"
SHAPES = {
    "sk-or key (env)": KEY,
    "shapeless key (env)": WRONG_KEY,
    "shapeless slack token (env)": TOKEN,
    "xoxb token (env)": WRONG_TOKEN,
    "webhook (Secret block)": BLOCK_WEBHOOK,
    "base_url password": PASSWORD,
    "wrong base_url password": WRONG_PASSWORD,
}


def derived(value: str) -> list[str]:
    """Forms a secret travels in besides itself (issue 21): base64 (standard; URL-safe unpadded), HTTP Basic of
    `user:value`, URL-encoded. `Bearer <value>` holds the value itself."""
    raw = value.encode()
    return [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("="),
            base64.b64encode(f"{USER}:{value}".encode()).decode(), quote(value, safe="")]


#: What the upstream echoes at first: the secrets the process holds from the start, and their derived forms
#: (an upstream can only echo what it was sent or what leaked to it; a value the process has never seen
#: cannot be known to it). Each stage below adds the secret it introduces.
ECHOED = [TOKEN, KEY, BLOCK_WEBHOOK, *derived(KEY), *derived(TOKEN), *derived(BLOCK_WEBHOOK)]
PLAIN = ("alpha", "beta", "gamma")


def fleet(faulty: bool) -> Any:
    tags = (*PLAIN, *ECHO_TAGS)
    endpoints: list[dict[str, Any]] = [{"tag": t, "provider_name": t.capitalize()} for t in tags]
    if faulty:
        endpoints += [
            {"tag": "slowco", "provider_name": "Slowco",
             "faults": [{"kind": "slow_first_token", "delay_s": 3.5, "keepalive_s": 0.5}]},
            {"tag": "errco", "provider_name": "Errco",
             "faults": [{"kind": "http_error_before_stream", "status": 502}]},
            {"tag": "midco", "provider_name": "Midco", "faults": [{"kind": "midstream_error", "tokens": 2}]},
        ]
    else:
        endpoints.append({"tag": "slowco", "provider_name": "Slowco"})
    return parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})


# --- the scanner (tests/support/secret_scan.py) ----------------------------------------------------------
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
def upstream() -> Iterator[tuple[SimulatorHandle, EchoUpstream]]:
    with start_simulator(fleet(True), api_key=KEY) as sim:
        with EchoUpstream(sim.base_url, KEY, list(ECHOED), basic=(USER, PASSWORD)).running() as echo:
            yield sim, echo


@pytest.fixture
def webhook_block(prefect_harness: None) -> Iterator[None]:
    """SLACK_WEBHOOK_URL known only from its Prefect Secret block (the bot token wins the transport)."""
    from prefect.blocks.system import Secret

    from tasks.runtime.secrets import SECRET_BLOCKS

    name = SECRET_BLOCKS["SLACK_WEBHOOK_URL"]
    Secret(value=BLOCK_WEBHOOK).save(name, overwrite=True)
    try:
        yield
    finally:
        Secret.delete(name)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENROUTER_API_KEY": KEY, "PYTHONPATH": str(ROOT)}
    env["PREFECT_API_URL"] = "http://127.0.0.1:9/api"  # discovery fails before anything reaches Prefect
    env.pop("OPENROUTER_BASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "provider_canary.cli.main", "run", *args], cwd=cwd, env=env, capture_output=True,
        text=True,
        timeout=120,
    )


def toml_text(values: dict[str, Any]) -> str:
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())


def forms(value: str) -> list[str]:
    """What the scan looks for: the value, its 15-character prefix, its derived forms, and the prefixes of its
    plain base64 forms (a prefix of `base64(user:value)` is mostly the user's, who is no secret)."""
    return [value, cut(value), *derived(value), *(d[:15] for d in derived(value)[:2])]


def print_table(places: dict[str, list[str]], found: dict[str, dict[str, int]]) -> None:
    names = list(SHAPES)
    print("\nsecret scan: leaks per sink and secret (its value or 15-char prefix); texts: how many scanned")
    print("| sink | texts | " + " | ".join(names) + " |")
    print("| --- | --- |" + " --- |" * len(names))
    for where, texts in places.items():
        print(f"| {where} | {len(texts)} | " + " | ".join(str(found[where][n]) for n in names) + " |")


def test_planted_secrets_appear_nowhere(
    upstream: tuple[SimulatorHandle, EchoUpstream],
    webhook_block: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sim, echo = upstream
    ov = round_overrides(sim, tmp_path, MODEL, ttft_s=2.5, languages=["en", "de"], min_hosts=2)  # load-proof
    ov["base_url"] = echo.base_url
    _capture_all_logs(caplog)
    with SlackServer(token=TOKEN) as slack:
        _failing_rounds(ov, slack, echo, monkeypatch)
        raised = _a_round_with_a_wrong_key(ov, echo, monkeypatch)
        _rounds_with_a_wrong_slack_token(ov, sim, echo, monkeypatch)
        config = _canary_run(ov, echo, tmp_path, monkeypatch)
        captured = capsys.readouterr()
        assert f"{MODEL}" in captured.out

    # `canary run` processes given a base URL with the gateway's password: refused in one line (exit 2).
    nowhere = f"http://{USER}:{PASSWORD}@127.0.0.1:{closed_port()}/api/v1"
    refused = cli_run(["--config", str(config), "--base-url", nowhere], tmp_path)
    wrong = echo.base_url_with(USER, WRONG_PASSWORD)
    denied = cli_run(["--config", str(config), "--base-url", wrong], tmp_path)
    assert refused.returncode == 2 and denied.returncode == 2, (refused.stderr, denied.stderr)

    places = {
        "duckdb": list(duckdb_texts(Path(ov["db_path"]))),
        "snapshot": list(duckdb_texts(store.snapshot_path(ov["db_path"]))),
        "published": list(file_texts(Path(ov["publish_dir"]))),
        "prefect": list(prefect_texts(MODEL)),
        "slack": list(slack_texts(slack)),
        "logs": [f"{r.name}: {r.getMessage()} {r.exc_text or ''}" for r in caplog.records],
        "stdout/stderr": [captured.out, captured.err],
        "cli stderr": [refused.stdout, refused.stderr, denied.stdout, denied.stderr],
        "errors": raised,
    }
    _nothing_leaked(places)
    _the_scan_was_not_vacuous(places, echo)


def _failing_rounds(ov: dict[str, Any], slack: SlackServer, echo: EchoUpstream,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Two failing rounds: suspensions with evidence excerpts go to Slack."""
    from flows.round import canary_round

    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_CHANNEL", "#canary-admins")
    monkeypatch.setenv("SLACK_API_URL", slack.api_url)
    for i in range(2):
        canary_round(model=MODEL, round_ts=T0 + timedelta(minutes=30 * i), overrides=ov)
    assert len(slack.messages) >= 1, "the faults must have produced alerts"
    assert echo.echo_count >= 8, "the echo endpoints must have been probed"


def _a_round_with_a_wrong_key(ov: dict[str, Any], echo: EchoUpstream, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A round with a wrong OpenRouter key (every forwarded probe: 401 "User not found."); what it raised."""
    from flows.round import canary_round

    monkeypatch.setenv("OPENROUTER_API_KEY", WRONG_KEY)
    echo.echoed.insert(0, WRONG_KEY)
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
                " WHERE r.round_ts = ? AND a.tag IN ('alpha', 'beta', 'gamma')",
                [wrong_ts],
            ).fetchall()
        }
    assert raised or statuses == {401}, (raised, statuses)
    return raised


def _rounds_with_a_wrong_slack_token(ov: dict[str, Any], sim: SimulatorHandle, echo: EchoUpstream,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong Slack token: the alerts of later rounds are refused (invalid_auth) and kept as failed."""
    from flows.round import canary_round
    from tasks.alerts.delivery import deliver_outbox
    from tasks.alerts.slack_settings import SlackSettings

    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.setenv("SLACK_BOT_TOKEN", WRONG_TOKEN)
    echo.echoed.append(WRONG_TOKEN)
    sim.set_fleet(fleet(False))
    for i in (3, 4):  # slowco back to health: restore alerts, refused by Slack (wrong token)
        canary_round(model=MODEL, round_ts=T0 + timedelta(minutes=30 * i), overrides=ov)
    summary = deliver_outbox(ov["db_path"], SlackSettings.from_env(), T0 + timedelta(hours=3))
    with store.open_store(ov["db_path"]) as con:
        box = store.alert_rows(con)
        errors = list(box["last_error"].dropna())
    assert any("invalid_auth" in e for e in errors), (summary, box[["kind", "status", "last_error"]])


def _canary_run(ov: dict[str, Any], echo: EchoUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`canary run` (its own code path); a base URL with userinfo is refused by config validation (the caller).
    Returns the config file it ran with."""
    from provider_canary.cli.runs import run_once

    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    config = tmp_path / "canary.toml"
    config.write_text(toml_text({k: v for k, v in ov.items() if k != "base_url"}), encoding="utf-8")
    run_once(config=config, model=MODEL, base_url=echo.base_url, mode=None, db=None)
    return config


def _nothing_leaked(places: dict[str, list[str]]) -> None:
    for where, texts in places.items():
        assert texts or where == "errors", f"nothing was collected from {where}"
    found = {
        where: {name: len(leaks(forms(value), texts)) for name, value in SHAPES.items()}
        for where, texts in places.items()
    }
    print_table(places, found)
    needles = [n for v in SHAPES.values() for n in forms(v)]
    assert {where: leaks(needles, texts) for where, texts in places.items()} == {w: [] for w in places}


def _the_scan_was_not_vacuous(places: dict[str, list[str]], echo: EchoUpstream) -> None:
    """What was collected is where such a secret would have shown up."""
    assert any("suspend" in t for t in places["slack"])
    assert any("invalid_auth" in t for t in places["duckdb"])
    assert any("echoco" in t and "Your key is" in t for t in places["duckdb"])  # the echoed reply text
    assert any("errecho" in t for t in places["duckdb"])
    assert any("Your key is" in t for t in places["snapshot"])
    assert any(t.startswith("artifact round-") for t in places["prefect"])
    assert any(t.startswith("log: ") for t in places["prefect"])
    assert any("base_url" in t and f"127.0.0.1:{echo.port}" in t for t in places["prefect"])  # the parameter
    assert any("config:" in t for t in places["cli stderr"])
    assert any("Your header was" in t for t in places["duckdb"])  # the echoed Authorization header landed
