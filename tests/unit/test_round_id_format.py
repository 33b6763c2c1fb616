"""Round ids (tasks/core/plan.py `make_round_id`): the model and the round time to the millisecond, so two rounds
of one model in one second are two rounds; a whole-second time keeps the id it always had (ids stored before
milliseconds were added, histories and schedules on whole seconds, stay what they were)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks.core.plan import make_round_id
from tasks.core.types import Mode, RoundInfo
from tasks.spool.journal import JOURNAL_SUFFIX, Journal

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 1, 10, 0, 11, tzinfo=UTC)


def test_two_times_in_one_second_are_two_round_ids() -> None:
    ids = {make_round_id("m", T0 + timedelta(microseconds=us)) for us in (1_000, 250_000, 999_000)}
    assert ids == {"m@2026-11-01T10:00:11.001Z", "m@2026-11-01T10:00:11.250Z", "m@2026-11-01T10:00:11.999Z"}


def test_a_whole_second_keeps_the_id_it_always_had() -> None:
    assert make_round_id("m", T0) == "m@2026-11-01T10:00:11Z"


def test_two_rounds_in_one_second_keep_two_journals(tmp_path: Path) -> None:
    db = str(tmp_path / "c.duckdb")
    for ms in (250, 750):
        ts = T0 + timedelta(milliseconds=ms)
        Journal.start(db, RoundInfo(make_round_id("m", ts), "m", ts, Mode.ENFORCE), ts)
    assert sorted(p.name for p in (tmp_path / "c.duckdb.spool").glob("*" + JOURNAL_SUFFIX)) == [
        f"m@20261101T100011.250{JOURNAL_SUFFIX}", f"m@20261101T100011.750{JOURNAL_SUFFIX}"]
