"""The private Prefect server's SQLite transactions begin IMMEDIATE (tasks/prefect_api/server_child.py).

Prefect begins them DEFERRED: a transaction that read, then inserts after another connection wrote, fails at once
with "database is locked" (a 503, retried by the client for up to a minute; benchmarks/bench_private_api.py has the
burst that shows it). The first test runs that very sequence on Prefect's own database configuration: the second
connection's write lands between the first transaction's read and its insert. DEFERRED, the insert fails; IMMEDIATE,
the first transaction holds the write lock from its start, so the other connection's write waits for it and both
land.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa

from tasks.prefect_api import server_child


@pytest.fixture
def sqlite_configuration(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from prefect.server.database import configurations

    cls = configurations.AioSqliteConfiguration
    monkeypatch.setattr(cls, "begin_transaction", cls.begin_transaction)  # restored after the test
    return cls


async def _read_then_insert_while_another_writes(cls, path: Path) -> list[str]:  # type: ignore[no-untyped-def]
    """Transaction A reads, connection B inserts (its own transaction, as Prefect begins it), A inserts."""
    config = cls(connection_url=f"sqlite+aiosqlite:///{path}", timeout=5)
    engine = await config.engine()
    async with engine.begin() as conn:
        await conn.execute(sa.text("CREATE TABLE runs (name TEXT)"))
    seen: list[str] = []
    a, b = await config.session(engine), await config.session(engine)
    try:
        async with config.begin_transaction(a):
            await a.execute(sa.text("SELECT count(*) FROM runs"))

            async def other_writer() -> None:
                async with config.begin_transaction(b):
                    await b.execute(sa.text("INSERT INTO runs VALUES ('b')"))
                seen.append("b")

            writer = asyncio.create_task(other_writer())
            await asyncio.sleep(0.3)  # B commits now (deferred) or waits for A's lock (immediate)
            await a.execute(sa.text("INSERT INTO runs VALUES ('a')"))
            seen.append("a")
        await writer
    finally:
        await a.close()
        await b.close()
        await engine.dispose()
    return seen


def test_deferred_transactions_fail_the_insert_that_read_first(sqlite_configuration, tmp_path: Path) -> None:
    """Prefect's own behaviour, the failure the private server had: A's insert is refused."""
    with pytest.raises(sa.exc.OperationalError, match="database is locked"):
        asyncio.run(_read_then_insert_while_another_writes(sqlite_configuration, tmp_path / "p.db"))


def test_immediate_transactions_serialize_and_lose_nothing(sqlite_configuration, tmp_path: Path) -> None:
    server_child.serialize_sqlite_transactions()
    seen = asyncio.run(_read_then_insert_while_another_writes(sqlite_configuration, tmp_path / "p.db"))
    assert seen == ["a", "b"]  # B waited for A's transaction instead of A failing


def test_deferred_on_request_leaves_prefect_as_it_is(sqlite_configuration, monkeypatch: pytest.MonkeyPatch) -> None:
    before = sqlite_configuration.begin_transaction
    monkeypatch.setenv(server_child.SQLITE_BEGIN_ENV, "deferred")
    server_child.serialize_sqlite_transactions()
    assert sqlite_configuration.begin_transaction is before
