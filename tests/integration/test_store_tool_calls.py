"""attempts.tool_calls (migration 4): tool calls land as JSON, come back as records, and a file from before
the migration is upgraded in place (its attempts read back with no calls)."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest

from tasks import store
from tasks.core.types import Attempt, Contract, Mode, RoundInfo, ToolCall
from tasks.store import migrations

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MODEL = "m/tools"
INFO = RoundInfo(round_id="r1", model=MODEL, round_ts=T0, mode=Mode.ENFORCE)
CALLS = (
    ToolCall(0, "call_a", "roll_dice", '{"character":"Kael","dice":{"count":2,"sides":20}}'),
    ToolCall(1, None, "functions.lookup_rule", "{'topic': 'ünïcode'"),
)


def attempt(n: int, calls: tuple[ToolCall, ...]) -> Attempt:
    return Attempt(
        round_id="r1",
        model=MODEL,
        tag="fireworks",
        provider_name="Fireworks",
        contract=Contract.TOOLS,
        attempt_no=n,
        started_at=T0,
        language="en",
        http_status=200,
        finish_reason="tool_calls" if calls else "stop",
        text="" if calls else "The kitchen smells of bread.",
        tool_calls=calls,
    )


def test_tool_calls_round_trip_through_the_attempts_table(tmp_db: str) -> None:
    attempts = [attempt(1, CALLS), attempt(2, ())]
    with store.open_store(tmp_db) as con:
        store.land_round(con, INFO, attempts, endpoints=["fireworks"])
        back = store.attempts_of_round(con, "r1")
        names = con.execute(
            "SELECT attempt_no, json_extract_string(tool_calls, '$[0].name'), json_array_length(tool_calls) "
            "FROM attempts ORDER BY attempt_no"
        ).fetchall()
        kind = con.execute(
            "SELECT data_type FROM duckdb_columns()"
            " WHERE table_name = 'attempts' AND column_name = 'tool_calls'"
        ).fetchone()
    assert back == attempts
    assert names == [(1, "roll_dice", 2), (2, None, 0)]
    assert kind == ("JSON",)


def test_a_version_3_file_is_migrated_and_its_old_attempts_have_no_calls(tmp_db: str) -> None:
    con = duckdb.connect(tmp_db)
    con.execute(migrations._BOOKKEEPING_SQL)
    for m in migrations.MIGRATIONS[:3]:
        for statement in migrations._statements(con, m.sql):
            con.execute(statement)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [m.version, m.name, T0])
    con.execute(
        "INSERT INTO attempts (attempt_id, round_id, model, tag, provider_name, contract, attempt_no,"
        " started_at, chunk_count, keepalive_count, pin_mismatch, text, text_truncated, reasoning)"
        " VALUES ('r0:x:ttft:1', 'r0', ?, 'x', 'X', 'ttft', 1, ?, 3, 0, false, 'hi', false, '')",
        [MODEL, T0],
    )
    con.close()
    with store.open_store(tmp_db) as con:
        assert store.schema_version(con) == store.LATEST_VERSION >= 4
        (old,) = store.attempts_of_round(con, "r0")
        raw = con.execute("SELECT tool_calls FROM attempts WHERE round_id = 'r0'").fetchone()
    assert old.tool_calls == () and old.text == "hi"
    assert raw == (None,)
