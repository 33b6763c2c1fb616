"""Row plumbing shared by the store modules: UTC normalisation, secret redaction, bulk inserts.

Every timestamp column is TIMESTAMPTZ and every connection runs with ``TimeZone='UTC'``, so values come
back as UTC-aware datetimes. A naive datetime handed to the store is taken to be UTC already.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from tasks.runtime.secrets import redact_known_secrets_opt

Connection = duckdb.DuckDBPyConnection

def utc(value: datetime | None) -> datetime | None:
    """Return ``value`` as a UTC-aware datetime (naive input is taken to be UTC)."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def utc_required(value: datetime) -> datetime:
    out = utc(value)
    assert out is not None
    return out


def one_line(text: str | None, limit: int = 1000) -> str | None:
    """Redact, flatten to one line and cap ``text`` (error details, reasons)."""
    cleaned = redact_known_secrets_opt(text)
    if cleaned is None:
        return None
    flat = " ".join(cleaned.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def warm_up() -> None:
    """Make the first Arrow conversion of this process now: it imports pandas (pyarrow's lazy shim, ~370 modules,
    0.5-1.7 s), which the first round's insert would otherwise do inside its write window, every other round of
    the cycle waiting for the store's lock meanwhile (6 s at 32 rounds starting at once under load: issue 45)."""
    pa.Table.from_pylist([{"warm": 1}])


def insert_rows(
    con: Connection, table: str, rows: Sequence[Mapping[str, Any]], *, skip_existing: bool = False
) -> int:
    """Insert ``rows`` (dicts keyed by column name) in one statement through an Arrow table.

    Columns are matched by name; missing columns take their defaults. With ``skip_existing`` rows whose
    primary key is already stored are left alone. Returns the number of rows actually inserted.
    """
    if not rows:
        return 0
    arrow = pa.Table.from_pylist([dict(r) for r in rows])
    view = f"_incoming_{table}"
    conflict = " ON CONFLICT DO NOTHING" if skip_existing else ""
    con.execute("SELECT 1").fetchall()  # settle a caller's half-read result (it would block register)
    con.register(view, arrow)
    try:
        # DuckDB answers an INSERT with the count of rows it inserted (conflicts skipped excluded);
        # `RETURNING 1` gave the same count at 3-4x the cost of the whole insert.
        counted = con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {view}{conflict}").fetchall()
    finally:
        con.unregister(view)
    return int(counted[0][0]) if counted else 0


def fetch_first(con: Connection, sql: str, params: Sequence[object] | None = None) -> tuple[Any, ...] | None:
    """The first row of ``sql`` or None. Always drains the result: in DuckDB 2 a half-read result blocks
    ``register`` (and so every later insert) on the connection."""
    rows = con.execute(sql, list(params) if params is not None else []).fetchall()
    return tuple(rows[0]) if rows else None


def fetch_dicts(con: Connection, sql: str, params: Sequence[object] | None = None) -> list[dict[str, Any]]:
    """Run ``sql`` and return its rows as dicts keyed by column name."""
    cur = con.execute(sql, list(params) if params is not None else [])
    names = [d[0] for d in cur.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


@contextmanager
def transaction(con: Connection) -> Iterator[Connection]:
    """BEGIN ... COMMIT, or ROLLBACK when the block raises. Nested blocks join the outermost one."""
    key = id(con)
    if _open_transactions.get(key):
        _open_transactions[key] += 1
        try:
            yield con
        finally:
            _open_transactions[key] -= 1
        return
    con.execute("BEGIN TRANSACTION")
    _open_transactions[key] = 1
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    else:
        con.execute("COMMIT")
    finally:
        _open_transactions.pop(key, None)


#: Depth of the open transaction per connection (DuckDB has no nested BEGIN).
_open_transactions: dict[int, int] = {}
