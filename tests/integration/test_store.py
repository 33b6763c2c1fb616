"""The DuckDB store on a temp file: migrations, idempotent landing, complete-only history, state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tasks import store
from tasks.core.contracts import probed
from tasks.core.types import (
    Action,
    Attempt,
    Contract,
    ContractResult,
    Decision,
    Endpoint,
    EndpointState,
    ErrorClass,
    Mode,
    Outcome,
    RoundInfo,
    Usage,
)
from tasks.errors import StoreError
from tasks.store import migrations

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MODEL = "meta-llama/llama-3.3-70b-instruct"
ENDPOINTS = [Endpoint(MODEL, "deepinfra/fp8", "DeepInfra"), Endpoint(MODEL, "novita", "Novita")]


def make_round(n: int, model: str = MODEL) -> RoundInfo:
    return RoundInfo(f"r{n}", model, T0 + timedelta(minutes=30 * n), Mode.OBSERVE)


def make_attempts(info: RoundInfo, ttft_ms: float = 120.0) -> list[Attempt]:
    return [
        Attempt(
            round_id=info.round_id,
            model=info.model,
            tag=e.tag,
            provider_name=e.provider_name,
            contract=c,
            attempt_no=1,
            started_at=info.round_ts,
            language="pt" if c is Contract.LANGUAGE else "en",
            http_status=200,
            ttft_ms=ttft_ms,
            total_ms=900.5,
            chunk_count=12,
            keepalive_count=1,
            finish_reason="stop",
            served_provider=e.provider_name,
            usage=Usage(10, 20, 30, 0.0001),
            text=f"*smiles* reply of {e.tag}",
        )
        for e in ENDPOINTS
        for c in probed()
    ]


def result(
    info: RoundInfo, tag: str, contract: Contract, outcome: Outcome, reason: str = "ok"
) -> ContractResult:
    return ContractResult(
        info.round_id,
        info.model,
        tag,
        contract,
        outcome,
        reason,
        evidence=f"{reason} seen",
        attempt_ids=(f"{info.round_id}:{tag}:{contract}:1",),
        language="pt" if contract is Contract.LANGUAGE else None,
    )


def table_counts(con: store.Connection) -> dict[str, int]:
    tables = ("rounds", "round_endpoints", "attempts", "outcomes", "endpoint_rounds")
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # type: ignore[index]


def test_migrations_from_empty_then_reopen_applies_nothing(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        versions = [r[0] for r in con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()]
        views = {
            r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
        }
    assert versions == [m.version for m in store.MIGRATIONS]
    assert {
        "v_attempts",
        "v_endpoint_rounds",
        "v_suspensions",
        "v_language_matrix",
        "v_ignore_history",
    } <= views
    with store.open_store(tmp_db) as con:
        assert store.migrate(con) == []
        assert con.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(store.MIGRATIONS),)


def test_an_older_file_is_upgraded_on_open(tmp_db: str) -> None:
    con = duckdb.connect(tmp_db)
    con.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)"
    )
    for m in store.MIGRATIONS[:2]:
        for statement in migrations._statements(con, m.sql):
            con.execute(statement)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [m.version, m.name])
    con.close()
    with store.open_store(tmp_db) as con:
        assert store.schema_version(con) == store.LATEST_VERSION
        assert con.execute("SELECT count(*) FROM endpoint_rounds").fetchone() == (0,)


def test_a_semicolon_inside_a_literal_or_a_comment_stays_in_its_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The runner splits a migration with DuckDB's parser: a `;` in a string, a quoted name or a comment of a
    migration is not a statement's end (splitting the text on `;` ran `INSERT ... VALUES ('a` and failed)."""
    sql = """
    CREATE TABLE notes (body VARCHAR, "odd;name" INTEGER); -- a comment; with a semicolon
    /* a block comment; it ends here */ INSERT INTO notes VALUES ('one; two', 1);
    CREATE VIEW v_notes AS SELECT body FROM notes WHERE body <> ';'
    """
    extra = migrations.Migration(migrations.LATEST_VERSION + 1, "semicolons", sql)
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, extra))
    monkeypatch.setattr(migrations, "LATEST_VERSION", extra.version)
    con = duckdb.connect()
    try:
        assert migrations.migrate(con)[-1] == extra.version
        assert con.execute('SELECT body, "odd;name" FROM notes').fetchall() == [("one; two", 1)]
        assert con.execute("SELECT body FROM v_notes").fetchall() == [("one; two",)]
    finally:
        con.close()


def test_a_migration_that_does_not_parse_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = migrations.Migration(migrations.LATEST_VERSION + 1, "broken", "CREATE TABL oops")
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, extra))
    monkeypatch.setattr(migrations, "LATEST_VERSION", extra.version)
    con = duckdb.connect()
    try:
        with pytest.raises(StoreError) as err:
            migrations.migrate(con)
        assert str(err.value).startswith(f"store: migration {extra.version} (broken) failed: Parser Error")
        assert "\n" not in str(err.value)
        assert migrations.schema_version(con) == extra.version - 1  # the earlier ones stay applied
    finally:
        con.close()


def test_a_newer_file_is_refused_with_one_line(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        con.execute("INSERT INTO schema_migrations VALUES (999, 'future', now())")
    with pytest.raises(StoreError) as err, store.open_store(tmp_db):
        pass
    assert "999" in str(err.value) and "\n" not in str(err.value)


def test_landing_the_same_round_twice_gives_the_same_rows(tmp_db: str) -> None:
    info = make_round(1)
    outcomes = [result(info, e.tag, c, Outcome.PASS) for e in ENDPOINTS for c in probed()]
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, make_attempts(info), endpoints=ENDPOINTS)
        store.land_outcomes(con, info.round_id, outcomes)
        first = con.execute("SELECT * FROM attempts ORDER BY attempt_id").fetchall()
        counts = table_counts(con)
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, make_attempts(info), endpoints=ENDPOINTS)
        store.land_outcomes(con, info.round_id, outcomes)
        assert con.execute("SELECT * FROM attempts ORDER BY attempt_id").fetchall() == first
        assert table_counts(con) == counts
    assert counts["attempts"] == len(ENDPOINTS) * len(probed())
    assert counts["outcomes"] == len(outcomes) and counts["rounds"] == 1


def test_relanding_replaces_rows_that_disappeared(tmp_db: str) -> None:
    info = make_round(1)
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, make_attempts(info), endpoints=ENDPOINTS)
        store.land_outcomes(con, info.round_id, [result(info, "novita", Contract.TTFT, Outcome.FAIL)])
        store.land_round(con, info, make_attempts(info)[:3], endpoints=ENDPOINTS[:1])
        assert table_counts(con) == {
            "rounds": 1,
            "round_endpoints": 1,
            "attempts": 3,
            "outcomes": 0,
            "endpoint_rounds": 0,
        }
        row = con.execute("SELECT endpoints, endpoint_count, attempt_count, status FROM rounds").fetchone()
    assert row == (["deepinfra/fp8"], 1, 3, "running")


def test_attempts_round_trip_and_outcomes_are_idempotent(tmp_db: str) -> None:
    info = make_round(2)
    attempts = make_attempts(info)
    broken = Attempt(
        info.round_id,
        MODEL,
        "novita",
        "Novita",
        Contract.STRUCTURED,
        2,
        info.round_ts,
        error_class=ErrorClass.MIDSTREAM_ERROR,
        error_code=502,
        error_detail="upstream\nerror 502",
    )
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, [*attempts, broken], endpoints=ENDPOINTS)
        results = [result(info, "novita", Contract.STRUCTURED, Outcome.TRANSPORT, "http_502")]
        assert store.land_outcomes(con, info.round_id, results) == 1
        assert store.land_outcomes(con, info.round_id, results) == 1
        back = store.attempts_of_round(con, info.round_id)
        assert store.outcomes_of_round(con, info.round_id) == results
        assert con.execute("SELECT outcome_count FROM rounds").fetchone() == (1,)
    by_id = {a.attempt_id: a for a in back}
    assert by_id[attempts[0].attempt_id] == attempts[0]
    assert by_id[broken.attempt_id].error_detail == "upstream error 502"  # flattened to one line
    assert by_id[broken.attempt_id].error_class is ErrorClass.MIDSTREAM_ERROR


def test_secrets_never_reach_the_tables(tmp_db: str) -> None:
    info = make_round(3)
    leaky = Attempt(
        info.round_id,
        MODEL,
        "novita",
        "Novita",
        Contract.TTFT,
        1,
        info.round_ts,
        error_detail="401 for Bearer sk-or-v1-0123456789abcdef",
        text="key sk-or-v1-0123456789abcdef",
    )
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, [leaky])
        row = con.execute("SELECT error_detail, text FROM attempts").fetchone()
    assert row is not None and all("0123456789abcdef" not in v for v in row)


def test_only_complete_rounds_are_history(tmp_db: str) -> None:
    r1, r2, r3 = make_round(1), make_round(2), make_round(3)
    with store.open_store(tmp_db) as con:
        for info in (r1, r2, r3):
            store.land_round(con, info, make_attempts(info), endpoints=ENDPOINTS)
            store.land_outcomes(
                con,
                info.round_id,
                [
                    result(info, "deepinfra/fp8", Contract.TTFT, Outcome.FAIL, "ttft_exceeded"),
                    result(info, "novita", Contract.TTFT, Outcome.PASS),
                    result(info, "novita", Contract.REFUSAL, Outcome.TRANSPORT, "http_429"),
                ],
            )
        assert store.complete_round(con, r1.round_id, at=r1.round_ts + timedelta(minutes=2))
        store.finish_round(con, r2.round_id, status="crashed", at=r2.round_ts, error="boom\ntraceback")
        assert not store.complete_round(con, "unknown-round")
        complete = store.complete_rounds(con, model=MODEL)
        history = store.round_status_history(con, model=MODEL)
        crashed = store.round_rows(con).set_index("round_id").loc["r2"]
    assert list(complete["round_id"]) == ["r1"]
    assert history[["tag", "status"]].values.tolist() == [["deepinfra/fp8", "fail"], ["novita", "transport"]]
    assert list(history.columns[:4]) == ["round_ts", "model", "tag", "status"]
    assert history["round_ts"].iloc[0] == r1.round_ts
    assert crashed["status"] == "crashed" and crashed["error"] == "boom traceback"


def test_recorded_statuses_win_over_the_derived_ones(tmp_db: str) -> None:
    info = make_round(1)
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, [], endpoints=ENDPOINTS)
        store.land_outcomes(con, info.round_id, [result(info, "novita", Contract.TTFT, Outcome.PASS)])
        store.complete_round(con, info.round_id, {"novita": "inconclusive", "deepinfra/fp8": "fail"}, at=T0)
        rows = con.execute(
            "SELECT tag, status, derived_status, status_recorded FROM v_endpoint_rounds ORDER BY tag"
        ).fetchall()
    assert rows == [
        ("deepinfra/fp8", "fail", "inconclusive", True),
        ("novita", "inconclusive", "clean", True),
    ]


def test_latest_language_outcome_per_endpoint_comes_from_complete_rounds(tmp_db: str) -> None:
    r1, r2 = make_round(1), make_round(2)
    with store.open_store(tmp_db) as con:
        for info, outcome in ((r1, Outcome.FAIL), (r2, Outcome.PASS)):
            store.land_round(con, info, [], endpoints=ENDPOINTS)
            store.land_outcomes(con, info.round_id, [result(info, "novita", Contract.LANGUAGE, outcome)])
        store.complete_round(con, r1.round_id, at=T0)  # r2 never completes
        assert store.last_language_outcomes(con, MODEL) == {"novita": ("pt", Outcome.FAIL)}


def test_states_round_trip_per_mode(tmp_db: str) -> None:
    suspended = EndpointState(
        MODEL,
        "novita",
        Mode.ENFORCE,
        fail_streak=0,
        clean_streak=1,
        suspended_until=T0 + timedelta(days=1),
        suspended_at=T0,
        ladder_step=1,
        last_suspension_end=T0 - timedelta(days=20),
        floor_blocked=True,
        fail_rounds=("r1", "r2"),
        clean_rounds=("r3",),
        streak_at=T0 - timedelta(minutes=30),
    )
    shadow = EndpointState(MODEL, "novita", Mode.OBSERVE, fail_streak=1)
    with store.open_store(tmp_db) as con:
        assert store.save_states(con, [suspended, shadow]) == 2
        assert store.load_states(con, MODEL, Mode.ENFORCE) == {"novita": suspended}
        updated = EndpointState(MODEL, "novita", Mode.OBSERVE, fail_streak=2)
        store.save_states(con, {"novita": updated})
        assert store.load_states(con, MODEL, "observe") == {"novita": updated}
        assert store.load_states(con, "other/model", Mode.ENFORCE) == {}
        assert con.execute("SELECT count(*) FROM endpoint_state").fetchone() == (2,)


def test_decisions_are_idempotent_and_queryable(tmp_db: str) -> None:
    d1 = Decision(
        T0,
        MODEL,
        "novita",
        Action.SUSPEND,
        Mode.ENFORCE,
        ladder_step=1,
        until=T0 + timedelta(days=1),
        reason="2 failing rounds",
        evidence_round_ids=("r1", "r2"),
        round_id="r2",
    )
    d2 = Decision(
        T0 + timedelta(hours=3),
        MODEL,
        "novita",
        Action.LIFT,
        Mode.ENFORCE,
        reason="false alarm",
        actor="alice",
    )
    with store.open_store(tmp_db) as con:
        assert store.append_decisions(con, [d1, d1]) == 1
        assert store.append_decisions(con, [d1, d2]) == 1
        assert store.decisions_between(con) == [d1, d2]
        assert store.decisions_between(con, T0 + timedelta(hours=1), T0 + timedelta(hours=4)) == [d2]
        assert store.decisions_between(con, model="x") == []


def test_settings_keep_their_history(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        assert store.get_setting(con, store.MODE_KEY) is None
        assert store.get_setting(con, store.MODE_KEY, "observe") == "observe"
        store.set_setting(con, store.MODE_KEY, "enforce", at=T0, who="alice")
        store.set_setting(con, store.MODE_KEY, "observe", at=T0 + timedelta(hours=1), who="bob")
        assert store.get_setting(con, store.MODE_KEY) == "observe"
        history = con.execute("SELECT value, changed_by FROM settings_history ORDER BY changed_at").fetchall()
    assert history == [("enforce", "alice"), ("observe", "bob")]


def test_timestamps_are_declared_and_come_back_utc(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        types = dict(
            con.execute(
                "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns"
                " WHERE column_name LIKE '%\\_at' ESCAPE '\\' OR column_name LIKE '%\\_ts' ESCAPE '\\'"
            ).fetchall()
        )
        local = datetime(2026, 11, 1, 12, 0, tzinfo=UTC).astimezone(
            __import__("zoneinfo").ZoneInfo("Asia/Tokyo")
        )
        store.land_round(con, RoundInfo("rz", MODEL, local, Mode.OBSERVE), [])
        back = con.execute("SELECT round_ts FROM rounds").fetchone()
    assert types and set(types.values()) == {"TIMESTAMP WITH TIME ZONE"}
    assert back is not None and back[0] == local and back[0].utcoffset() == timedelta(0)


def test_bad_file_is_one_line_store_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.duckdb"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as err, store.open_store(junk, lock_timeout_s=0.2):
        pass
    assert "\n" not in str(err.value) and "junk.duckdb" in str(err.value)


def test_a_half_read_result_does_not_block_later_writes(tmp_db: str) -> None:
    info = make_round(1)
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, make_attempts(info), endpoints=ENDPOINTS)
        con.execute("SELECT * FROM attempts").fetchone()  # a caller leaves a streaming result half-read
        decision = Decision(T0, MODEL, "novita", Action.WOULD_SUSPEND, Mode.OBSERVE)
        assert store.append_decisions(con, [decision]) == 1


def test_windows_on_a_held_file_are_utc_and_single_threaded_whatever_the_local_zone(
    tmp_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`store.held_open` (a history's fresh file): its windows are cursors that skip the per-window TimeZone and
    migration check, so the held connection must set both for the whole database."""
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        info = make_round(1)
        with store.held_open(tmp_db):
            with store.open_store(tmp_db) as con:
                settings = con.execute(
                    "SELECT current_setting('TimeZone'), current_setting('threads')").fetchone()
                store.land_round(con, info, make_attempts(info), endpoints=ENDPOINTS)
            with store.open_store(tmp_db, read_only=True) as con:
                (started,) = con.execute("SELECT started_at FROM attempts LIMIT 1").fetchone() or (None,)
        with duckdb.connect(tmp_db) as con:
            (version,) = con.execute("SELECT max(version) FROM schema_migrations").fetchone() or (None,)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert settings == ("UTC", 1)
    assert started is not None and started.utcoffset() == timedelta(0) and started == info.round_ts
    assert version == store.migrations.LATEST_VERSION
