"""A round whose process died keeps the probes that had ended (tasks/spool/probes.py) and the next round of its
model in that database lands them (tasks/round/write_window.py `land_leftovers`): the whole round when its probing
had ended, a partial round of the endpoints whose probes had all ended when it died mid-probe; a line cut by the
kill is skipped; probes that cannot be landed are set aside and the round is marked crashed. Real DuckDB, a real
dead process, no Prefect."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks import store
from tasks.config import CanaryConfig
from tasks.core.types import Attempt, Contract, Endpoint, Mode, RoundInfo
from tasks.round.write_window import land_leftovers
from tasks.runtime.liveness import ProcessId
from tasks.spool.journal import Journal
from tasks.spool.probes import ProbeJournal
from tasks.store.settlement import mark_running

pytestmark = pytest.mark.integration
MODEL = "acme/kept-model"
T0 = datetime(2026, 8, 1, 8, 0, tzinfo=UTC)
TAGS = ("alpha", "beta", "gamma")


def dead_owner() -> ProcessId:
    """A process of this host that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    me = ProcessId.current()
    owner = ProcessId(proc.pid, me.host, me.start)
    proc.wait()
    return owner


def attempts(info: RoundInfo, tag: str) -> list[Attempt]:
    return [Attempt(round_id=info.round_id, model=MODEL, tag=tag, provider_name=tag.title(), contract=Contract.TTFT,
                    attempt_no=1, started_at=T0, http_status=200, ttft_ms=120.0, total_ms=900.0, chunk_count=4,
                    finish_reason="stop", served_provider=tag.title(), text="Hello there, traveller.")]


def killed_round(db: Path, tags: tuple[str, ...], *, complete: bool, run_id: str = "run-1") -> tuple[RoundInfo, Path]:
    """A round marked running whose process died after keeping the probes of `tags` (and, with `complete`, the
    mark that its probing ended); a last line cut short by the kill."""
    info = RoundInfo(f"{MODEL}@1", MODEL, T0, Mode.ENFORCE, run_id=run_id)
    with store.open_store(db) as con:
        mark_running(con, info, started_at=T0)
    journal = Journal.start(str(db), info, T0)
    journal.step("probe")
    kept = ProbeJournal.beside(journal.path)
    endpoints = [Endpoint(MODEL, t, t.title()) for t in tags]
    for e in endpoints:
        kept.endpoint(e, attempts(info, e.tag))
    if complete:
        kept.complete(endpoints, [a for e in endpoints for a in attempts(info, e.tag)])
    assert kept.path is not None
    with kept.path.open("a") as fh:
        fh.write('{"endpoint": {"model": "acme/kept-model", "tag": "delta", "provider')  # cut by the kill
    obj = json.loads(journal.path.read_text())
    journal.path.write_text(json.dumps({**obj, **dead_owner().as_json()}))
    return info, kept.path


def next_round(db: Path) -> list[str]:
    cfg = CanaryConfig(db_path=str(db), models=(MODEL,), languages=("en",))
    with store.open_store(db) as con:
        return land_leftovers(con, cfg, MODEL, f"{MODEL}@2", [], T0 + timedelta(minutes=30))


def landed(db: Path, info: RoundInfo) -> dict:
    with store.open_store(db, read_only=True) as con:
        [row] = store.round_rows(con, model=MODEL).to_dict("records")
        row["attempts"] = con.execute("SELECT count(*) FROM attempts WHERE round_id = ?", [info.round_id]).fetchone()[0]
    return row


def test_a_round_killed_mid_probe_lands_as_a_partial_round_of_what_it_kept(tmp_path: Path) -> None:
    db = tmp_path / "shard-a.duckdb"
    info, path = killed_round(db, TAGS[:2], complete=False)
    lines = next_round(db)
    assert lines == [f"landed round {info.round_id} from the probes it kept (2 attempts of 2 endpoints) as a "
                     "partial round (it died during step probe)"]
    row = landed(db, info)
    assert (row["status"], row["partial"], row["deferred"], row["attempts"]) == ("complete", True, True, 2)
    assert sorted(row["endpoints"]) == ["alpha", "beta"]
    assert not path.exists() and not list(path.parent.glob("*.journal.json"))  # consumed
    assert next_round(db) == []  # once


def test_a_round_killed_after_its_probing_lands_whole(tmp_path: Path) -> None:
    db = tmp_path / "shard-b.duckdb"
    info, _ = killed_round(db, TAGS, complete=True)
    [line] = next_round(db)
    assert line == f"landed round {info.round_id} from the probes it kept (3 attempts of 3 endpoints)"
    row = landed(db, info)
    assert (row["status"], row["partial"], row["deferred"]) == ("complete", False, True)
    assert sorted(row["endpoints"]) == sorted(TAGS)


def test_probes_that_cannot_be_landed_are_set_aside_not_retried_for_ever(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    info, path = killed_round(db, TAGS[:1], complete=False, run_id="run-1")
    with store.open_store(db) as con:  # another run's round now holds the id: the save refuses to replace it
        con.execute("UPDATE rounds SET run_id = 'another-run' WHERE round_id = ?", [info.round_id])
    lines = next_round(db)
    assert lines[0].startswith(f"round {info.round_id}: the probes it kept were not landed (RoundIdTaken: ")
    assert not path.exists() and path.with_name(path.name.replace(".probes.jsonl", ".unlanded.jsonl")).exists()
    assert landed(db, info)["attempts"] == 0  # the other run's round is left as it is
    assert not any("landed round" in line for line in next_round(db))  # tried once, not at every round


def test_a_round_that_kept_nothing_is_crashed(tmp_path: Path) -> None:
    db = tmp_path / "d.duckdb"
    info, path = killed_round(db, (), complete=False)
    assert next_round(db) == [f"round {info.round_id} crashed during step probe"]
    assert landed(db, info)["status"] == "crashed"
