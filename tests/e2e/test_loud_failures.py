"""A round that cannot do its job is a loud failure (docs/design.md "Failing loudly", docs/operations.md "Fault
table"), through `canary run` as a user runs it (the installed console script in a subprocess, against the tests'
Prefect API), the loopback simulator and the local Slack server through the real slack-sdk client.

For a database truncated to half its size, an empty one and one of random bytes, a disk that is full when the
round starts and one that fills while it probes: the alert reaches Slack during that very run (the outbox cannot be
read, so it goes straight there), `canary run` exits 1 with one line naming the round, the round's attempts are
kept in a spool file, and `canary status` says what is wrong in one line (exit 2). The disk cases use a small
tmpfs (root only; skipped otherwise); freeing the disk lets the next run land the kept round.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from provider_canary.simulator.fleet import Fleet, parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator
from tasks import store
from tasks.spool.journal import fallback_spool_dir, spool_dir
from tests.support.admin_db import build_db
from tests.support.run_config import write_run_config
from tests.support.slack_server import SlackServer

pytestmark = pytest.mark.e2e

MODEL = "acme/loud-model"
CANARY = str(Path(sys.executable).with_name("canary"))


def fleet(slow_s: float = 0.0) -> Fleet:
    endpoints: list[dict[str, object]] = [{"tag": t, "provider_name": t.capitalize()} for t in ("alpha", "beta")]
    if slow_s:
        endpoints.append({"tag": "slow", "provider_name": "Slow",
                          "faults": [{"kind": "slow_first_token", "delay_s": slow_s, "keepalive_s": 0.5}]})
    return parse_fleet({"models": [{"id": MODEL, "endpoints": endpoints}]})


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with start_simulator(fleet()) as handle:
        yield handle


@pytest.fixture(autouse=True)
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs' TMPDIR (the spool's fallback directory) is tmp_path: the test computes the same fallback."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def write_config(sim: SimulatorHandle, where: Path, db: Path) -> Path:
    return write_run_config(sim, where, db, MODEL, ttft_s=5)


def canary(*args: str, sim: SimulatorHandle, tmp: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`canary ...` against the tests' Prefect API; Slack settings come from the `slack` fixture's environment;
    TMPDIR (the spool's fallback) under `tmp`."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "OPENROUTER_API_KEY": sim.api_key, "PREFECT_API_URL": str(PREFECT_API_URL.value()),
           "TMPDIR": str(tmp)}
    return subprocess.run([CANARY, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)


def alerts_of(slack: SlackServer, kind: str) -> list[str]:
    return [m.alert_key or "" for m in slack.messages if (m.alert_key or "").startswith(kind + "|")]


def kept_rounds(db: Path) -> list[dict[str, object]]:
    """The spool files of deferred rounds, next to the database or in the fallback directory."""
    files = [*spool_dir(db).glob("*.round.json"), *fallback_spool_dir(db).glob("*.round.json")]
    return [json.loads(f.read_text()) for f in files]


def assert_loud(done: subprocess.CompletedProcess[str], db: Path, slack: SlackServer) -> None:
    """Exit 1, one stderr line naming the model's failed round, the direct alert in Slack, the attempts kept."""
    assert done.returncode == 1, (done.stdout, done.stderr[-3000:])
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("canary: ")]
    assert lines and lines[0].startswith(f"canary: {MODEL}: round failed: StoreError: store: cannot "), lines
    assert alerts_of(slack, "store_unreadable") == [f"store_unreadable|{db.resolve()}|{datetime.now(UTC):%Y-%m-%d}"]
    [kept] = kept_rounds(db)
    assert kept["model"] == MODEL and len(kept["attempts"]) > 0  # type: ignore[arg-type]


def damage(db: Path, how: str) -> None:
    if how == "truncated":
        build_db(db)
        os.truncate(db, db.stat().st_size // 2)
    elif how == "empty":
        db.write_bytes(b"")
    else:
        db.write_bytes(os.urandom(256 * 1024))


@pytest.mark.parametrize("how", ["truncated", "empty", "random"])
def test_a_damaged_database_alerts_keeps_the_probes_and_fails_the_run(
    prefect_harness: None, sim: SimulatorHandle, slack: SlackServer, tmp_path: Path, how: str
) -> None:
    db = tmp_path / f"damaged-{how}.duckdb"
    damage(db, how)
    cfg = write_config(sim, tmp_path, db)

    done = canary("run", "--config", str(cfg), sim=sim, tmp=tmp_path)
    assert_loud(done, db, slack)

    status = canary("status", "--config", str(cfg), sim=sim, tmp=tmp_path)
    assert status.returncode == 2 and status.stdout == ""
    assert status.stderr.startswith("canary: store: cannot ") and str(db.resolve()) in status.stderr and \
        status.stderr.count("\n") == 1, status.stderr


def test_the_deadman_alerts_on_a_database_that_fails_on_read(
    prefect_harness: None, slack: SlackServer, tmp_path: Path
) -> None:
    """It opens, then a read fails (a truncated file): the dead-man's check is itself the alert, it never raises."""
    from flows.deadman import canary_deadman

    db = tmp_path / "canary.duckdb"
    damage(db, "truncated")
    out = canary_deadman(db_path=str(db), now=datetime.now(UTC), overrides={"models": [MODEL]})
    assert "cannot read or write" in out["store_unreadable"] and out["sent"] == 1
    assert alerts_of(slack, "store_unreadable") == [f"store_unreadable|{db.resolve()}|{datetime.now(UTC):%Y-%m-%d}"]


def test_a_journal_the_disk_refuses_fails_a_round_that_saved(
    prefect_harness: None, sim: SimulatorHandle, slack: SlackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing can be written beside the database (its spool path is a file), the database itself works: the round
    probes, saves and publishes (its journal goes to the fallback directory), then fails loudly."""
    from flows.round import canary_round
    from tasks.errors import SpoolError
    from tests.support.rounds import round_overrides

    monkeypatch.setenv("OPENROUTER_API_KEY", sim.api_key)
    overrides = round_overrides(sim, tmp_path, MODEL, languages=["en"])
    db = Path(overrides["db_path"])
    spool_dir(db).write_text("not a directory")
    with pytest.raises(SpoolError, match="cannot write"):
        canary_round(model=MODEL, round_ts=datetime.now(UTC), overrides=overrides)
    assert alerts_of(slack, "spool_unwritable") == [f"spool_unwritable|{db.resolve()}|{datetime.now(UTC):%Y-%m-%d}"]
    with store.open_store(db, read_only=True) as con:
        assert con.execute("SELECT status FROM rounds").fetchall() == [("complete",)]
    assert list(fallback_spool_dir(db).glob("*.journal.json")) == []  # finished: nothing left to mark crashed


# -- a full disk (a small tmpfs) -------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a tmpfs needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of `disk`; returns the filler file (delete it to free the disk)."""
    filler = disk / "filler"
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    return filler


def test_a_disk_full_at_round_start_alerts_and_fails_the_run(
    prefect_harness: None, sim: SimulatorHandle, slack: SlackServer, tmp_path: Path, small_disk: Path
) -> None:
    db = small_disk / "full-at-start.duckdb"
    build_db(db)
    cfg = write_config(sim, tmp_path, db)
    filler = fill(small_disk)

    done = canary("run", "--config", str(cfg), sim=sim, tmp=tmp_path)
    assert_loud(done, db, slack)
    assert list(fallback_spool_dir(db).glob("*.round.json")), "the spool next to the database is full: the fallback"

    filler.unlink()  # the disk is freed: the next run lands the kept round, then its own
    again = canary("run", "--config", str(cfg), sim=sim, tmp=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert kept_rounds(db) == []
    with store.open_store(db, read_only=True) as con:
        statuses = [r[0] for r in con.execute("SELECT status FROM rounds WHERE model = ? ORDER BY round_ts",
                                              [MODEL]).fetchall()]
    assert statuses == ["complete", "complete"]


def test_a_disk_that_fills_during_the_round_alerts_and_the_next_run_lands_the_round(
    prefect_harness: None, slack: SlackServer, tmp_path: Path, small_disk: Path
) -> None:
    """The disk fills while the round probes (a slow endpoint keeps it there): its save cannot be written."""
    db = small_disk / "full-in-save.duckdb"
    build_db(db)
    with start_simulator(fleet(slow_s=4.0)) as slow_sim:
        cfg = write_config(slow_sim, tmp_path, db)
        from prefect.settings import PREFECT_API_URL

        env = {**os.environ, "OPENROUTER_API_KEY": slow_sim.api_key, "TMPDIR": str(tmp_path),
               "PREFECT_API_URL": str(PREFECT_API_URL.value())}
        proc = subprocess.Popen([CANARY, "run", "--config", str(cfg)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        deadline = time.monotonic() + 120
        while not any('"step": "probe"' in p.read_text() for p in spool_dir(db).glob("*.journal.json")
                      if p.exists()):
            assert time.monotonic() < deadline and proc.poll() is None, "the round never reached its probes"
            time.sleep(0.05)
        filler = fill(small_disk)
        out, err = proc.communicate(timeout=180)
        assert_loud(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), db, slack)

        filler.unlink()
        again = canary("run", "--config", str(cfg), sim=slow_sim, tmp=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert kept_rounds(db) == []
    with store.open_store(db, read_only=True) as con:
        landed = con.execute("SELECT count(*) FROM rounds r JOIN attempts a USING (round_id) WHERE r.model = ? "
                             "AND r.status = 'complete'", [MODEL]).fetchone()
        statuses = [r[0] for r in con.execute("SELECT status FROM rounds WHERE model = ? ORDER BY round_ts",
                                              [MODEL]).fetchall()]
    assert statuses == ["complete", "complete"] and landed is not None and landed[0] > 0
