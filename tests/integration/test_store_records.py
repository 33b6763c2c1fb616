"""Operational exclusions with history, the alerts outbox, route events and the analysts' views."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tasks import store
from tasks.core.types import (
    Action,
    Alert,
    Attempt,
    Contract,
    ContractResult,
    Decision,
    Mode,
    OperationalExclusion,
    Outcome,
    RoundInfo,
    RouteEvent,
)

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MODEL = "meta-llama/llama-3.3-70b-instruct"
HOUR = timedelta(hours=1)


def excl(
    tag: str, at: datetime, *, model: str | None = MODEL, until: datetime | None = None
) -> OperationalExclusion:
    return OperationalExclusion(
        tag=tag, reason=f"incident on {tag}", who="alice", added_at=at, model=model, until=until
    )


def test_exclusions_keep_history_and_expire(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        first = store.add_exclusion(con, excl("novita", T0))
        assert store.add_exclusion(con, excl("novita", T0)) == first  # same add twice: one row
        store.add_exclusion(con, excl("fireworks", T0, until=T0 + 2 * HOUR))
        store.add_exclusion(con, excl("together", T0, model=None))  # every model
        assert [e.tag for e in store.active_exclusions(con, T0 + HOUR, model=MODEL)] == [
            "fireworks",
            "novita",
            "together",
        ]
        assert [e.tag for e in store.active_exclusions(con, T0 + 3 * HOUR)] == ["novita", "together"]
        assert [e.tag for e in store.active_exclusions(con, T0, model="other/model")] == ["together"]

        assert store.remove_exclusion(con, "novita", MODEL, "bob", "fixed upstream", T0 + 4 * HOUR) == 1
        assert store.remove_exclusion(con, "novita", MODEL, "bob", "again", T0 + 5 * HOUR) == 0
        assert store.remove_exclusion(con, "together", MODEL, "bob", "wrong model key", T0) == 0
        assert [e.tag for e in store.active_exclusions(con, T0 + 4 * HOUR)] == ["together"]

        history = store.exclusion_history(con, tag="novita")
    assert len(history) == 1
    row = history.iloc[0]
    assert (row["who"], row["removed_by"], row["removed_reason"]) == ("alice", "bob", "fixed upstream")
    assert row["removed_at"] == T0 + 4 * HOUR


def test_re_adding_an_active_exclusion_supersedes_the_old_row(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        store.add_exclusion(con, excl("novita", T0, until=T0 + HOUR))
        store.add_exclusion(con, excl("novita", T0 + HOUR / 2))  # now open-ended
        active = store.active_exclusions(con, T0 + 2 * HOUR)
        history = store.exclusion_history(con)
    assert [(e.tag, e.until) for e in active] == [("novita", None)]
    assert list(history["removed_reason"].fillna("")) == ["superseded", ""]


def alert(key: str, at: datetime) -> Alert:
    return Alert(key=key, created_at=at, kind="would_suspend", model=MODEL, tag="novita", text=f"alert {key}")


def test_outbox_lifecycle_pending_failed_retry_sent(tmp_db: str) -> None:
    a, b = alert("k1", T0), alert("k2", T0 + timedelta(seconds=1))
    with store.open_store(tmp_db) as con:
        assert store.enqueue_alerts(con, [a, b, a]) == 2
        assert store.enqueue_alerts(con, [a]) == 0
        assert store.pending_alerts(con, 10) == [a, b]
        assert store.pending_alerts(con, 1) == [a]

        token = "xoxb-1234567890-abcdefghij"
        claimed = store.claim_alerts(con, T0 + HOUR)
        assert [(c.key, unknown) for c, unknown in claimed] == [("k1", False), ("k2", False)]
        assert store.claim_alerts(con, T0 + HOUR) == []  # claimed alerts are not handed out twice
        store.record_delivery(con, "k1", T0 + HOUR, sent=False, error=f"429 rate limited\nauth {token}",
                              retry_after_s=30)
        store.record_delivery(con, "k2", T0 + HOUR, sent=False, error="timed out", unknown=True)
        assert store.claim_alerts(con, T0 + HOUR) == []  # k1 waits for its retry time, k2's fate is unknown
        later = store.claim_alerts(con, T0 + 2 * HOUR)  # k2's claim expired: handed out as unknown
        assert [(c.key, unknown) for c, unknown in later] == [("k1", False), ("k2", True)]

        store.record_delivery(con, "k1", T0 + 2 * HOUR, sent=True)
        store.record_delivery(con, "k1", T0 + 3 * HOUR, sent=False, error="late error")  # no effect: sent
        store.record_delivery(con, "k2", T0 + 2 * HOUR, sent=True, reposted_unknown=True)
        assert store.enqueue_alerts(con, [a]) == 0  # a sent key is never queued again
        assert store.pending_alerts(con, 10) == []
        rows = store.alert_rows(con).set_index("key")
    assert rows.loc["k1", "status"] == "sent" and rows.loc["k1", "attempts"] == 2
    assert rows.loc["k1", "last_error"].startswith("429 rate limited auth")
    assert token not in rows.to_string() and "\n" not in rows.loc["k1", "last_error"]
    assert rows.loc["k2", "status"] == "sent" and rows.loc["k2", "possible_duplicates"] == 1


def test_route_events_by_path_and_by_connection(tmp_db: str) -> None:
    ev = RouteEvent(
        at=T0,
        key="chat-default",
        tier=1,
        upstream="http://127.0.0.1:9/v1 m",
        reason="http_503",
        latency_ms=12.5,
        model=MODEL,
    )
    assert store.append_route_events(tmp_db, [ev, ev]) == 2
    with store.open_store(tmp_db) as con:
        assert store.append_route_events(con, [replace(ev, client="team-a")]) == 1
        rows = store.route_event_rows(con, since=T0, until=T0 + HOUR)
    assert list(rows["reason"]) == ["http_503"] * 3 and rows["latency_ms"].iloc[0] == 12.5
    assert sorted(rows["client"].fillna("")) == ["", "", "team-a"]  # the router's client, where it named one


def decision(at: datetime, action: Action, mode: Mode = Mode.ENFORCE, **kw: object) -> Decision:
    return Decision(at, MODEL, "novita", action, mode, **kw)  # type: ignore[arg-type]


def test_v_suspensions_pairs_starts_with_their_ends(tmp_db: str) -> None:
    day = timedelta(days=1)
    with store.open_store(tmp_db) as con:
        store.append_decisions(
            con,
            [
                decision(T0, Action.SUSPEND, ladder_step=1, until=T0 + day),
                decision(T0 + day, Action.EXPIRE),
                decision(
                    T0 + day, Action.SUSPEND, ladder_step=2, until=T0 + 4 * day
                ),  # same round as the expiry
                decision(T0 + 2 * day, Action.LIFT, actor="alice", reason="vendor fixed it"),
                decision(T0 + 3 * day, Action.WOULD_SUSPEND, Mode.OBSERVE, ladder_step=1),
                decision(T0 + 5 * day, Action.SUSPEND, ladder_step=3, until=T0 + 12 * day),
            ],
        )
        rows = con.execute(
            "SELECT mode, ladder_step, started_at, ended_by, ended_by_actor, hours_suspended"
            " FROM v_suspensions ORDER BY started_at"
        ).fetchall()
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("enforce", 1, "expire"),
        ("enforce", 2, "lift"),
        ("observe", 1, "still_active"),
        ("enforce", 3, "still_active"),
    ]
    assert rows[1][4] == "alice" and rows[0][5] == 24.0 and rows[1][5] == 24.0


def test_v_attempts_and_language_matrix(tmp_db: str) -> None:
    infos = [RoundInfo(f"r{n}", MODEL, T0 + n * HOUR, Mode.OBSERVE) for n in range(3)]
    with store.open_store(tmp_db) as con:
        for n, info in enumerate(infos):
            att = Attempt(
                info.round_id,
                MODEL,
                "novita",
                "Novita",
                Contract.LANGUAGE,
                1,
                info.round_ts,
                language="pt",
                ttft_ms=300.0 + n,
                text="Olá, tudo bem? " * 20,
            )
            store.land_round(con, info, [att], endpoints=["novita"])
            outcome = Outcome.FAIL if n < 2 else Outcome.PASS
            store.land_outcomes(
                con,
                info.round_id,
                [
                    ContractResult(
                        info.round_id,
                        MODEL,
                        "novita",
                        Contract.LANGUAGE,
                        outcome,
                        "language_mix" if n < 2 else "ok",
                        attempt_ids=(att.attempt_id,),
                        language="pt",
                    )
                ],
            )
            if n < 2:  # the last round never completes: not in the matrix
                store.complete_round(con, info.round_id, at=info.round_ts)
        attempts = con.execute(
            "SELECT tag, provider_name, contract, language, outcome, outcome_reason, ttft_ms,"
            " text_chars FROM v_attempts ORDER BY round_ts"
        ).fetchall()
        matrix = con.execute(
            "SELECT tag, language, rounds, passes, fails, fail_reasons FROM v_language_matrix"
        ).fetchall()
    assert attempts[0] == ("novita", "Novita", "language", "pt", "fail", "language_mix", 300.0, 300)
    assert attempts[2][4] == "pass"
    assert matrix == [("novita", "pt", 2, 0, 2, "language_mix")]


def test_v_ignore_history_lists_operational_and_canary_events(tmp_db: str) -> None:
    with store.open_store(tmp_db) as con:
        store.add_exclusion(con, excl("fireworks", T0))
        store.remove_exclusion(con, "fireworks", MODEL, "bob", "ok now", T0 + HOUR)
        store.append_decisions(
            con,
            [
                decision(T0 + 2 * HOUR, Action.SUSPEND, until=T0 + 26 * HOUR),
                decision(T0 + 3 * HOUR, Action.WOULD_SUSPEND, Mode.OBSERVE),
            ],
        )
        rows = con.execute(
            "SELECT tag, layer, event, actor FROM v_ignore_history ORDER BY event_at"
        ).fetchall()
    assert rows == [
        ("fireworks", "operational", "add", "alice"),
        ("fireworks", "operational", "remove", "bob"),
        ("novita", "canary", "suspend", "canary"),
    ]
