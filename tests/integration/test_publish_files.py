"""Published ignore lists are readable by an application running as another user: written atomically with
the permissions of a plain file write (0666 less the umask), not mkstemp's 0600."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tasks.config import CanaryConfig
from tasks.core.types import IgnoreList
from tasks.ignore_list.publish import OWNER_FILE, write_ignore_file

pytestmark = pytest.mark.integration
MODEL = "acme/model"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_published_lists_get_the_mode_a_plain_write_would(tmp_path: Path, umask: int, mode: int) -> None:
    cfg = CanaryConfig(models=(MODEL,), db_path=str(tmp_path / "c.duckdb"), publish_dir=str(tmp_path / "pub"))
    old = os.umask(umask)
    try:
        path = write_ignore_file(cfg, IgnoreList(MODEL, ("groq",), ()))
        path = write_ignore_file(cfg, IgnoreList(MODEL, ("groq", "novita"), ()))  # over an existing file
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert stat.S_IMODE((path.parent / OWNER_FILE).stat().st_mode) == mode
    assert json.loads(path.read_text())["ignore"] == ["groq", "novita"]
    assert sorted(p.name for p in path.parent.iterdir()) == [OWNER_FILE, path.name]  # no temp file left
