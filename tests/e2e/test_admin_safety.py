"""Admin commands are safe to run by hand (issue 11): a read never creates anything, a change on one
database never touches another's published list, lift and mode say what they did (stdout and one alert),
and no temporary Prefect server is started just to refresh an artifact. All through the real console script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tasks import store
from tasks.core.plan import model_slug
from tests.support.admin_db import MODEL, SUSPENDED, build_db, write_config
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e
SLUG = model_slug(MODEL)
READ_COMMANDS = [
    ["status"],
    ["ignore-list"],
    ["exclude", "list"],
    ["at", "--model", MODEL, "--time", "2026-11-01T10:00:00Z"],
    ["export-history", "out.jsonl"],
]
WRITE_COMMANDS = [
    ["exclude", "add", "groq", "--reason", "r", "--force"],
    ["exclude", "remove", "groq"],
    ["lift", "groq", "--reason", "r"],
    ["mode", "observe"],
]


def canary(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "CANARY_", "PREFECT_API"))}
    exe = Path(sys.executable).with_name("canary")
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, cwd=cwd, env={**base, **(env or {})}, timeout=120
    )


def assert_missing_database(proc: subprocess.CompletedProcess[str], path: Path) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in (str(path), "canary run", "canary demo", "--db", "CANARY_DB"):
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("cmd", READ_COMMANDS + WRITE_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_missing_database_is_one_line_and_creates_nothing(cmd: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent" / "dir" / "x.duckdb"
    assert_missing_database(canary(*cmd, "--db", str(missing), cwd=tmp_path), missing)
    assert_missing_database(canary(*cmd, cwd=tmp_path, env={"CANARY_DB": str(missing)}), missing)
    assert not (tmp_path / "nonexistent").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # not even ./canary.duckdb or ./published


def test_read_commands_leave_an_existing_database_untouched(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    build_db(db)
    store.snapshot_path(db).unlink()
    before = db.stat().st_mtime_ns
    for cmd in READ_COMMANDS:
        proc = canary(*cmd, "--db", str(db), cwd=tmp_path)
        assert proc.returncode == 0, (cmd, proc.stderr)
    assert db.stat().st_mtime_ns == before
    assert not store.snapshot_path(db).exists()  # a read publishes no snapshot either


def test_a_change_on_another_database_never_overwrites_the_published_list(tmp_path: Path) -> None:
    production = tmp_path / "canary.duckdb"
    build_db(production)
    assert canary("exclude", "add", "fireworks", "--reason", "incident", cwd=tmp_path).returncode == 0
    live = tmp_path / "published" / f"{SLUG}.json"
    published = live.read_text()
    assert "fireworks" in json.loads(published)["ignore"]

    scratch = tmp_path / "scratch.duckdb"
    build_db(scratch)
    proc = canary("exclude", "add", "together", "--reason", "try", "--db", str(scratch), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert live.read_text() == published  # production's list is untouched ...
    own = json.loads((tmp_path / "scratch-published" / f"{SLUG}.json").read_text())
    assert own["ignore"] == ["deepinfra/fp8", "groq", "novita", "together"]  # ... the scratch one has its own

    # Pointed explicitly at production's directory, the scratch database is refused before any change.
    config = write_config(tmp_path, db=scratch, publish_dir=tmp_path / "published")
    proc = canary("lift", "groq", "--reason", "r", "--config", str(config), cwd=tmp_path)
    assert proc.returncode == 2 and "holds the ignore lists of" in proc.stderr
    assert str(production) in proc.stderr
    assert live.read_text() == published
    with store.open_store(scratch, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM decisions").fetchone() == (0,)


def _outbox(db: Path) -> list[dict[str, object]]:
    with store.open_store(db, read_only=True) as con:
        return store.alert_rows(con).to_dict("records")


def test_mode_observe_names_every_release_and_queues_one_alert(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    build_db(db)
    config = write_config(tmp_path)
    with SlackServer(token="xoxb-test") as slack:
        env = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_CHANNEL": "#canary", "SLACK_API_URL": slack.api_url}
        proc = canary("mode", "observe", "--config", str(config), cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        for tag in SUSPENDED:
            assert any(ln.startswith("released") and f" {tag} " in ln for ln in proc.stdout.splitlines())
        assert "3 canary suspension(s) released" in proc.stdout
        assert "provider.ignore = []" in proc.stdout
        rows = [r for r in _outbox(db) if r["kind"] == "mode_switch"]
        assert len(rows) == 1 and rows[0]["status"] == "sent"
        assert [m.body["text"] for m in slack.messages] == [rows[0]["text"]]
        assert all(tag in str(rows[0]["text"]) for tag in SUSPENDED)

        back = canary("mode", "enforce", "--config", str(config), cwd=tmp_path, env=env)
        assert back.returncode == 0, back.stderr
        assert "0 suspensions reinstated" in back.stdout
        assert len([r for r in _outbox(db) if r["kind"] == "mode_switch"]) == 2 and len(slack.messages) == 2

        again = canary("mode", "enforce", "--config", str(config), cwd=tmp_path, env=env)
        assert "already enforce" in again.stdout and len(slack.messages) == 2  # no change, no alert


def test_lift_says_what_it_did_and_the_alert_is_delivered(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    build_db(db)
    config = write_config(tmp_path)
    with SlackServer(token="xoxb-test") as slack:
        env = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_CHANNEL": "#canary", "SLACK_API_URL": slack.api_url}
        proc = canary("lift", "groq", "--reason", "fixed", "--config", str(config), cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "lifted groq" in proc.stdout and "was suspended until" in proc.stdout
        assert 'provider.ignore = ["deepinfra/fp8", "novita"]' in proc.stdout
        rows = [r for r in _outbox(db) if r["kind"] == "lift"]
        assert len(rows) == 1 and rows[0]["status"] == "sent" and len(slack.messages) == 1


@pytest.mark.timing  # asserts on wall time: run alone (scripts/test)
@pytest.mark.parametrize(
    "cmd",
    [
        ["lift", "groq", "--reason", "r"],
        ["mode", "observe"],
        ["exclude", "add", "fireworks", "--reason", "r"],
    ],
    ids=lambda c: c[0],
)
def test_admin_changes_start_no_prefect_server_without_an_api(cmd: list[str], tmp_path: Path) -> None:
    # the same command once untimed, on its own files: the timed run measures the command, not a fresh clone's
    # first imports compiling their bytecode (6.3 s at load 5 in a fresh clone; the command itself ~0.7 s)
    warm = tmp_path / "warm"
    warm.mkdir()
    build_db(warm / "c.duckdb")
    assert canary(*cmd, "--config", str(write_config(warm)), cwd=warm).returncode == 0
    build_db(tmp_path / "c.duckdb")
    config = write_config(tmp_path)
    t0 = time.monotonic()
    proc = canary(*cmd, "--config", str(config), cwd=tmp_path)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert "temporary server" not in proc.stdout + proc.stderr
    assert "refreshed by the next round" in proc.stdout and "PREFECT_API_URL" in proc.stdout
    assert elapsed < 6, elapsed  # ~0.7 s measured; a temporary Prefect server alone takes 7-13 s


def test_exclude_add_refuses_a_tag_the_last_discovery_did_not_see(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    build_db(db)
    config = write_config(tmp_path)
    proc = canary("exclude", "add", "fireworx", "--reason", "typo", "--config", str(config), cwd=tmp_path)
    assert proc.returncode == 2 and "saw no endpoint 'fireworx'" in proc.stderr and "--force" in proc.stderr
    with store.open_store(db, read_only=True) as con:
        assert store.active_exclusions(con, datetime.now(UTC)) == []
    forced = canary(
        "exclude", "add", "fireworx", "--reason", "new host", "--force", "--config", str(config), cwd=tmp_path
    )
    assert forced.returncode == 0 and "warning" in forced.stderr and "excluded fireworx" in forced.stdout
    # a provider slug covering a seen endpoint (deepinfra -> deepinfra/fp8) needs no --force
    slug = canary("exclude", "add", "deepinfra", "--reason", "r", "--config", str(config), cwd=tmp_path)
    assert slug.returncode == 0 and slug.stderr == "", slug.stderr


def test_exclude_add_knows_the_endpoints_of_the_last_full_round_after_a_confirmation_round(
    tmp_path: Path,
) -> None:
    """A confirmation round lists only what it re-probed (here `novita`): `groq`, discovered by the last
    full round, is still a known endpoint."""
    from datetime import timedelta

    from tasks.core.types import Mode, RoundInfo

    db = tmp_path / "c.duckdb"
    round_ts = build_db(db)
    confirm_ts = round_ts + timedelta(minutes=5)
    info = RoundInfo(f"r-{confirm_ts:%Y%m%dT%H%M}", MODEL, confirm_ts, Mode.ENFORCE, partial=True)
    with store.open_store(db) as con:
        store.land_round(con, info, [], endpoints=["novita"], status="complete", finished_at=confirm_ts)
        con.execute("UPDATE rounds SET partial = true WHERE round_id = ?", [info.round_id])
    config = write_config(tmp_path)
    proc = canary("exclude", "add", "groq", "--reason", "incident", "--config", str(config), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "excluded groq" in proc.stdout
