"""Files a round keeps beside its database (tasks/spool/journal.py) when that directory cannot be written: they go to
the fallback directory under TMPDIR and are found there; when no directory takes them, a journal step does not stop
the round (its fault is remembered) and a deferred round raises SpoolError naming both places."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tasks.core.types import Endpoint, Mode, RoundInfo
from tasks.errors import SpoolError
from tasks.spool.journal import Journal, SpooledRound, fallback_spool_dir, spool_dir, spool_round, spooled_rounds

pytestmark = pytest.mark.integration
MODEL = "acme/spool-model"
T0 = datetime(2026, 9, 1, 8, 0, tzinfo=UTC)
INFO = RoundInfo(f"{MODEL}@1", MODEL, T0, Mode.ENFORCE)
ROUND = SpooledRound(INFO, None, (Endpoint(MODEL, "a", "A"),), (), T0)


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    db = tmp_path / "c.duckdb"
    spool_dir(db).write_text("not a directory")  # nothing can be written beside the database
    return db


def test_the_fallback_directory_takes_what_the_database_side_refuses(db: Path) -> None:
    kept = spool_round(str(db), ROUND)
    assert kept.path.parent == fallback_spool_dir(db) and kept.trouble and "cannot write" in kept.trouble
    assert [r.info.round_id for r in spooled_rounds(str(db))] == [INFO.round_id]

    journal = Journal.start(str(db), INFO, T0)
    assert journal.path.parent == fallback_spool_dir(db)
    assert journal.fault is not None and "the journal went to" in str(journal.fault)
    journal.finish()
    assert not journal.path.exists()


def test_with_no_directory_a_journal_goes_on_and_a_deferred_round_raises(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tmp-file").write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp-file"))  # the fallback cannot be made either
    journal = Journal.start(str(db), INFO, T0)
    journal.step("probe")  # never raises: the round goes on
    assert journal.fault is not None and str(journal.fault).count("cannot write") == 2
    with pytest.raises(SpoolError) as caught:
        spool_round(str(db), ROUND)
    assert str(spool_dir(db)) in str(caught.value) and str(fallback_spool_dir(db)) in str(caught.value)
