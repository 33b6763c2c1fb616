"""The operational layer edited from the Prefect UI (a Variable) and from the CLI never disagree."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks import store
from tasks.core.types import OperationalExclusion
from tasks.ignore_list import variable_sync

pytestmark = pytest.mark.e2e
NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)


def active(db: Path) -> list[tuple[str, str | None, str]]:
    with store.open_store(db) as con:
        return [(e.tag, e.model, e.who) for e in store.active_exclusions(con, NOW)]


def variable() -> list[dict[str, object]]:
    from prefect.variables import Variable

    return Variable.get(variable_sync.VARIABLE_NAME, default=None)  # type: ignore[return-value]


def test_cli_changes_reach_the_variable_and_ui_edits_reach_the_table(
    prefect_harness: None, tmp_path: Path
) -> None:
    from prefect.variables import Variable

    db = tmp_path / "c.duckdb"
    Variable.set(variable_sync.VARIABLE_NAME, [], overwrite=True)
    with store.open_store(db) as con:  # an admin's `canary exclude add`
        store.add_exclusion(con, OperationalExclusion("groq", "429 storm", "alice", NOW, model=None))
    assert variable_sync.sync(str(db), NOW)
    assert [e["tag"] for e in variable()] == ["groq"]

    # Someone edits the Variable in the Prefect UI: adds one entry, deletes another.
    Variable.set(
        variable_sync.VARIABLE_NAME,
        [
            {
                "tag": "chutes/bf16",
                "model": None,
                "reason": "cut streams",
                "who": "bob",
                "until": (NOW + timedelta(hours=4)).isoformat(),
            }
        ],
        overwrite=True,
    )
    assert variable_sync.sync(str(db), NOW)
    assert active(db) == [("chutes/bf16", None, "bob")]
    with store.open_store(db) as con:
        history = store.exclusion_history(con)
    assert set(history["tag"]) == {"groq", "chutes/bf16"}  # the removal is kept as history
    assert [e["tag"] for e in variable()] == ["chutes/bf16"]

    # Nothing changed on either side: a sync is a no-op.
    assert variable_sync.sync(str(db), NOW)
    assert active(db) == [("chutes/bf16", None, "bob")]


def test_a_malformed_ui_edit_is_ignored_and_overwritten_from_the_table(
    prefect_harness: None, tmp_path: Path
) -> None:
    from prefect.variables import Variable

    db = tmp_path / "c.duckdb"
    with store.open_store(db) as con:
        store.add_exclusion(con, OperationalExclusion("groq", "429 storm", "alice", NOW))
    Variable.set(variable_sync.VARIABLE_NAME, "not a list", overwrite=True)
    assert variable_sync.sync(str(db), NOW)
    assert active(db) == [("groq", None, "alice")]
    assert [e["tag"] for e in variable()] == ["groq"]
