"""The DuckDB store on a temp file: idempotent landing, complete-only history, recorded statuses, state, decisions and
settings."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tasks import store
from tasks.core.contracts import probed
from tasks.core.types import (
    Action,
    Attempt,
    Contract,
    Decision,
    EndpointState,
    ErrorClass,
    Mode,
    Outcome,
)
from tests.support.store_rounds import ENDPOINTS, MODEL, T0, make_attempts, make_round, result, table_counts

pytestmark = pytest.mark.integration


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
