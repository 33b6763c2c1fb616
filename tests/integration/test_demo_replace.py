"""`canary demo` never throws away an operator's state without being asked (issue 30: re-running the demo
replaced demo.duckdb and the operator's exclusions without a word)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from provider_canary.demo.replace_guard import refuse_to_replace
from provider_canary.demo.scenario import ONCALL
from provider_canary.demo.settings import DEMO_MODEL, DEMO_WHO
from tasks import store
from tasks.core.types import OperationalExclusion
from tasks.errors import CanaryError

pytestmark = pytest.mark.integration
CANARY = str(Path(sys.executable).with_name("canary"))
AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def demo(db: Path, *more: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "CANARY_"))}
    return subprocess.run([CANARY, "demo", "--rounds", "1", "--db", str(db), *more], capture_output=True,
                          text=True, cwd=db.parent, env=env, timeout=120)


def test_a_database_with_an_operators_exclusion_is_refused_in_one_line_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    with store.open_store(db) as con:
        store.set_setting(con, store.MODE_KEY, "enforce", at=AT, who=DEMO_WHO)  # what the demo itself writes
        store.add_exclusion(con, OperationalExclusion("groq", "429 storm", "alice", AT, DEMO_MODEL))
    before = db.read_bytes()
    done = demo(db)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"canary: demo: {db} holds changes made by hand (1 operational exclusion by alice) that the demo would "
        "throw away; pass --replace to start it afresh anyway, or --db another file"
    ]
    assert db.read_bytes() == before  # nothing replaced, nothing started


def test_a_lift_or_a_mode_switch_is_an_operators_too_and_replace_lets_the_demo_through(tmp_path: Path) -> None:
    from tests.support.admin_db import build_db

    db = tmp_path / "c.duckdb"
    build_db(db)  # its mode was set by "test": a person, as far as the demo can tell
    with pytest.raises(CanaryError, match=r"\(1 mode switch by test\)"):
        refuse_to_replace(db, replace=False)
    refuse_to_replace(db, replace=True)  # asked: no refusal


def test_the_demos_own_database_is_replaced_without_a_question(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    with store.open_store(db) as con:  # the demo's own changes: its mode and its history's admin story
        store.set_setting(con, store.MODE_KEY, "enforce", at=AT, who=DEMO_WHO)
        store.add_exclusion(con, OperationalExclusion("chutes/bf16", "cut streams", ONCALL, AT, DEMO_MODEL))
        store.remove_exclusion(con, "chutes/bf16", DEMO_MODEL, ONCALL, "fixed", AT)
    refuse_to_replace(db, replace=False)
    refuse_to_replace(tmp_path / "none-yet.duckdb", replace=False)


def test_a_file_that_is_no_canary_database_is_refused_too(tmp_path: Path) -> None:
    db = tmp_path / "notes.duckdb"
    db.write_text("my notes\n")
    with pytest.raises(CanaryError, match="is not a canary database the demo can read"):
        refuse_to_replace(db, replace=False)
    assert db.read_text() == "my notes\n"
