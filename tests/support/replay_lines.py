"""The replay tests' input (tests/unit/test_replay*.py): the sample files in tests/data and a status line."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"


def line(ts: str, tag: str, status: str, model: str = "m/a") -> str:
    return json.dumps({"round_ts": f"2026-11-01T{ts}:00Z", "model": model, "tag": tag, "status": status})
