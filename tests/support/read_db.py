"""One query on a DuckDB file, for tests reading what the router wrote after it stopped (read-only, closed at once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb


def query(db: Path | str, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
