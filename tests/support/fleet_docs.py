"""The fenced snippets of docs/operations.md "A fleet of routers" (each under `<!-- fleet: NAME -->`)."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def fleet_snippet(name: str) -> str:
    found = re.search(rf"<!-- fleet: {re.escape(name)} -->\n```\w+\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert found, f"docs/operations.md has no fleet snippet {name}"
    return found.group(1)
