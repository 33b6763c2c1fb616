"""A read-only window on a file that does not exist fails with one line naming the path and creates nothing
(neither the file nor its directory): reads never create a database."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks import store
from tasks.errors import StoreError

pytestmark = pytest.mark.integration


def test_a_read_only_window_never_creates_the_database(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "x.duckdb"
    with pytest.raises(StoreError, match="no database at") as err:
        with store.open_store(missing, read_only=True):
            pass
    assert str(missing) in str(err.value)
    assert not (tmp_path / "no").exists()
    with store.open_store(missing):  # a write window still creates it (what `canary run` needs)
        pass
    with store.open_store(missing, read_only=True) as con:
        assert store.schema_version(con) == store.LATEST_VERSION
