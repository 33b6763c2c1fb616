"""README.md's "Layout" lists every package of the project, one line each, in the order a newcomer walks it: a
package added (or a room moved) without its line fails here, and so does a line for a package that is gone."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def packages() -> set[str]:
    """Every folder of the project with an __init__.py (tests/ aside: its folders are listed on its own line)."""
    names = subprocess.run(["git", "ls-files", "*__init__.py"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    return {str(Path(n).parent) + "/" for n in names if not n.startswith("tests/") and (ROOT / n).is_file()}


def layout_lines() -> set[str]:
    """The folders README's Layout block starts a line with."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 1)[1].split("```", 1)[0]
    return {m.group(1) for m in re.finditer(r"^([\w./-]+/)\s", block, re.MULTILINE)}


def test_every_package_has_its_line_in_the_readme_layout() -> None:
    assert sorted(packages() - layout_lines()) == []


def test_every_package_line_in_the_readme_layout_is_a_package_or_a_top_level_folder() -> None:
    stale = [line for line in layout_lines() if not (ROOT / line).is_dir()]
    assert stale == []


def test_the_check_sees_the_rooms() -> None:
    assert {"tasks/", "tasks/probe/", "tasks/core/wire/", "provider_canary/router/", "flows/"} <= packages()
