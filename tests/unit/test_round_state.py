"""A round's lifecycle state (tasks/core/vocabulary.py `RoundState`): one enum whose values are the strings the
store, JSON, the CLI and docs/schema.md have always carried, so replacing the bare literals changed no byte."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tasks.core.types import STORED_ROUND_STATES, RoundState
from tasks.round.engine import RoundSummary
from tasks.store import schema

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_stored_states_are_the_rounds_tables_check_constraint() -> None:
    check = re.search(r"status\s+VARCHAR NOT NULL CHECK \(status IN \(([^)]*)\)\)", schema.ROUND_FAILED_SQL)
    assert check is not None
    assert sorted(re.findall(r"'(\w+)'", check.group(1))) == sorted(map(str, STORED_ROUND_STATES))


def test_docs_schema_names_every_stored_state_of_rounds_status() -> None:
    row = next(line for line in (ROOT / "docs/schema.md").read_text().splitlines()
               if line.startswith("| status | VARCHAR | `running`"))
    assert re.findall(r"`(\w+)` \(", row) == [str(s) for s in STORED_ROUND_STATES]


def test_the_values_are_the_lifecycles_words_in_json_and_text() -> None:
    assert [str(s) for s in RoundState] == ["running", "complete", "deferred", "failed", "crashed", "skipped"]
    out = RoundSummary("m/x@1", "m/x", RoundState.DEFERRED).as_dict()
    assert type(out["status"]) is str and json.dumps(out["status"]) == '"deferred"'
    assert f"{RoundState.CRASHED}" == "crashed" and RoundState.COMPLETE == "complete"


def test_a_stored_state_is_checked_with_the_plain_words_in_its_message() -> None:
    from tasks.store.landing import _check_state

    _check_state(RoundState.FAILED)
    _check_state("crashed")  # a plain string of a stored state is one too
    with pytest.raises(ValueError, match=r"one of \('running', 'complete', 'failed', 'crashed'\) \(got 'deferred'\)"):
        _check_state(RoundState.DEFERRED)
