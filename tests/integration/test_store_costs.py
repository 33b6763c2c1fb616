"""The cost views (migration 6) against the attempts table, on a real DuckDB file filled by the store's own
landing functions: per round, per day, per model and per endpoint, reported vs estimated."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

import duckdb
import pytest

from tasks import store
from tasks.core.budget import project
from tasks.core.cost import CostTotals, round_cost
from tasks.core.types import Attempt, Contract, Endpoint, Mode, RoundInfo, Usage
from tasks.store import migrations

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 22, 0, tzinfo=UTC)  # rounds run across midnight: two UTC days
MODELS = ("meta-llama/llama-3.3-70b-instruct", "qwen/qwen3-235b")
TAGS = ("deepinfra/fp8", "together", "parasail/fp8", "unlisted")
CONTRACTS = (Contract.TTFT, Contract.REFUSAL, Contract.STRUCTURED, Contract.LANGUAGE)


def endpoints(model: str) -> list[Endpoint]:
    priced = [Endpoint(model, t, t.title(), prompt_price_usd=2e-7 * (i + 1), completion_price_usd=6e-7 * (i + 1),
                       request_price_usd=1e-5 if t == "together" else None)
              for i, t in enumerate(TAGS[:3])]
    return [*priced, Endpoint(model, "unlisted", "Unlisted")]


def usage(rng: random.Random, tag: str) -> Usage:
    roll = rng.random()
    if roll < 0.1:
        return Usage()  # a transport failure: no usage
    prompt, completion = rng.randint(50, 400), rng.randint(0, 300)
    reports = tag == "deepinfra/fp8" or roll > 0.7
    return Usage(prompt, completion, prompt + completion, round(rng.uniform(0, 1e-3), 9) if reports else None)


def make_round(rng: random.Random, model: str, n: int) -> tuple[RoundInfo, list[Attempt], list[Endpoint]]:
    info = RoundInfo(f"{model}@{n}", model, T0 + timedelta(minutes=30 * n), Mode.OBSERVE)
    attempts = []
    for tag in TAGS:
        for contract in CONTRACTS:
            tries = 3 if contract is Contract.LANGUAGE and rng.random() < 0.3 else 1
            attempts += [Attempt(round_id=info.round_id, model=model, tag=tag, provider_name=tag.title(),
                                 contract=contract, attempt_no=k, started_at=info.round_ts, usage=usage(rng, tag))
                         for k in range(1, tries + 1)]
    return info, attempts, endpoints(model)


@pytest.fixture
def rounds(tmp_db: str) -> list[tuple[RoundInfo, list[Attempt], list[Endpoint]]]:
    rng = random.Random(13)
    made = [make_round(rng, m, n) for m in MODELS for n in range(8)]  # 22:00 .. 01:30
    with store.open_store(tmp_db) as con:
        for info, attempts, eps in made:
            store.land_round(con, info, attempts, endpoints=eps, status="complete")
    return made


def totals(con: store.Connection, view: str, where: str, params: list[object]) -> CostTotals:
    row = con.execute(
        "SELECT sum(requests), sum(prompt_tokens), sum(completion_tokens), sum(tokens), sum(reported_usd),"
        f" sum(estimated_usd), sum(estimated_requests), sum(unpriced_requests) FROM {view} WHERE {where}", params
    ).fetchone()
    assert row is not None
    return CostTotals(*(int(v) for v in row[:4]), float(row[4]), float(row[5]), int(row[6]), int(row[7]))


def approx(t: CostTotals) -> CostTotals:
    return CostTotals(t.requests, t.prompt_tokens, t.completion_tokens, t.tokens,
                      pytest.approx(t.reported_usd, rel=1e-9), pytest.approx(t.estimated_usd, rel=1e-9),
                      t.estimated_requests, t.unpriced_requests)


def test_views_sum_the_attempts_table(tmp_db: str, rounds: list[tuple[RoundInfo, list[Attempt], list[Endpoint]]]
                                      ) -> None:
    with store.open_store(tmp_db) as con:
        _every_view_sums_the_attempts(con)
        _the_estimate_is_the_listed_pricing_by_hand(con)
        _rounds_and_endpoints_cost_what_round_cost_says(con, rounds)
        _days_cost_what_their_rounds_cost(con, rounds)
        endpoint_days = totals(con, "v_endpoint_daily_costs", "tag = 'unlisted'", [])
        assert endpoint_days.estimated_requests == 0 and endpoint_days.unpriced_requests > 0


def _every_view_sums_the_attempts(con: store.Connection) -> None:
    raw = con.execute(
        "SELECT count(*), sum(coalesce(prompt_tokens, 0)), sum(coalesce(completion_tokens, 0)),"
        " sum(coalesce(cost, 0)), count(cost) FROM attempts"
    ).fetchone()
    assert raw is not None
    for view in ("v_endpoint_round_costs", "v_round_costs", "v_daily_costs", "v_endpoint_daily_costs"):
        t = totals(con, view, "true", [])
        assert (t.requests, t.prompt_tokens, t.completion_tokens) == (raw[0], raw[1], raw[2]), view
        assert t.reported_usd == pytest.approx(raw[3], rel=1e-9), view
        assert t.requests - t.estimated_requests - t.unpriced_requests == raw[4], view


def _the_estimate_is_the_listed_pricing_by_hand(con: store.Connection) -> None:
    """The estimate, recomputed by hand from the attempts and the round's listed pricing."""
    by_hand = con.execute(
        "SELECT sum(coalesce(a.prompt_tokens, 0) * e.prompt_price_usd"
        " + coalesce(a.completion_tokens, 0) * e.completion_price_usd + coalesce(e.request_price_usd, 0))"
        " FROM attempts a JOIN round_endpoints e USING (round_id, tag)"
        " WHERE a.cost IS NULL AND a.prompt_tokens IS NOT NULL AND e.prompt_price_usd IS NOT NULL"
    ).fetchone()
    assert by_hand is not None
    assert totals(con, "v_daily_costs", "true", []).estimated_usd == pytest.approx(by_hand[0], rel=1e-9)


def _rounds_and_endpoints_cost_what_round_cost_says(
    con: store.Connection, rounds: list[tuple[RoundInfo, list[Attempt], list[Endpoint]]]
) -> None:
    """Per round and per endpoint: the same as the pure function."""
    for info, attempts, eps in rounds:
        cost = round_cost(info.round_id, info.model, attempts, eps)
        assert totals(con, "v_round_costs", "round_id = ?", [info.round_id]) == approx(cost.total)
        for tag, t in cost.by_tag.items():
            got = totals(con, "v_endpoint_round_costs", "round_id = ? AND tag = ?", [info.round_id, tag])
            assert got == approx(t)


def _days_cost_what_their_rounds_cost(
    con: store.Connection, rounds: list[tuple[RoundInfo, list[Attempt], list[Endpoint]]]
) -> None:
    days = con.execute("SELECT day, model, rounds FROM v_daily_costs ORDER BY day, model").fetchall()
    assert days == [(date(2026, 11, 1), MODELS[0], 4), (date(2026, 11, 1), MODELS[1], 4),
                    (date(2026, 11, 2), MODELS[0], 4), (date(2026, 11, 2), MODELS[1], 4)]
    per_day = store.daily_costs(con, date(2026, 11, 2), date(2026, 11, 2))
    second_day = [rc for rc in rounds if rc[0].round_ts.date() == date(2026, 11, 2)]
    for model in MODELS:
        want = CostTotals()
        for info, attempts, eps in (rc for rc in second_day if rc[0].model == model):
            for tag_total in round_cost(info.round_id, model, attempts, eps).by_tag.values():
                want = _add(want, tag_total)
        assert per_day[(date(2026, 11, 2), model)] == approx(want)


def _add(a: CostTotals, b: CostTotals) -> CostTotals:
    return CostTotals(*(x + y for x, y in zip(
        (a.requests, a.prompt_tokens, a.completion_tokens, a.tokens, a.reported_usd, a.estimated_usd,
         a.estimated_requests, a.unpriced_requests),
        (b.requests, b.prompt_tokens, b.completion_tokens, b.tokens, b.reported_usd, b.estimated_usd,
         b.estimated_requests, b.unpriced_requests), strict=True)))


def test_projection_reads_the_last_day_and_each_models_last_round(
    tmp_db: str, rounds: list[tuple[RoundInfo, list[Attempt], list[Endpoint]]]
) -> None:
    now = T0 + timedelta(hours=4)  # after the last round (01:30)
    last = {m: [rc for rc in rounds if rc[0].model == m][-1] for m in MODELS}
    last_usd = {m: round_cost(i.round_id, m, a, e).total.usd for m, (i, a, e) in last.items()}
    confirmations = {m: round_cost(i.round_id, m, a, e).confirmations_usd for m, (i, a, e) in last.items()}
    all_usd = sum(round_cost(i.round_id, i.model, a, e).total.usd for i, a, e in rounds)
    with store.open_store(tmp_db) as con:
        p = store.read_projection(con, now, 30)
        only = store.read_projection(con, now, 30, [MODELS[1]])
        early = store.read_projection(con, T0 + timedelta(minutes=10), 30)
    want = project(all_usd, last_usd, confirmations, 30)
    assert p.last_day_usd == pytest.approx(want.last_day_usd)
    assert p.last_rounds_usd_per_day == pytest.approx(want.last_rounds_usd_per_day)
    assert p.confirmations_usd_per_day == pytest.approx(want.confirmations_usd_per_day)
    assert p.usd_per_day == pytest.approx(max(all_usd, sum(last_usd.values()) * 48))
    assert only.last_rounds_usd_per_day == pytest.approx(last_usd[MODELS[1]] * 48)
    first = {m: round_cost(i.round_id, m, a, e).total.usd for i, a, e in rounds if i.round_ts == T0
             for m in [i.model]}
    assert early.last_rounds_usd_per_day == pytest.approx(sum(first.values()) * 48)


def test_a_version_5_file_gains_pricing_columns_and_its_old_rounds_are_unpriced(tmp_db: str) -> None:
    con = duckdb.connect(tmp_db)
    con.execute(migrations._BOOKKEEPING_SQL)
    for m in migrations.MIGRATIONS[:5]:
        for statement in migrations._statements(con, m.sql):
            con.execute(statement)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [m.version, m.name, T0])
    con.execute("INSERT INTO rounds (round_id, model, round_ts, mode, status, started_at, endpoints,"
                " endpoint_count, attempt_count) VALUES ('r0', 'm/x', ?, 'observe', 'complete', ?, ['x'], 1, 1)",
                [T0, T0])
    con.execute("INSERT INTO round_endpoints (round_id, model, tag) VALUES ('r0', 'm/x', 'x')")
    con.execute(
        "INSERT INTO attempts (attempt_id, round_id, model, tag, provider_name, contract, attempt_no,"
        " started_at, chunk_count, keepalive_count, pin_mismatch, text, text_truncated, reasoning,"
        " prompt_tokens, completion_tokens, total_tokens)"
        " VALUES ('r0:x:ttft:1', 'r0', 'm/x', 'x', 'X', 'ttft', 1, ?, 3, 0, false, 'hi', false, '', 10, 5, 15)",
        [T0],
    )
    con.close()
    with store.open_store(tmp_db) as con:
        assert store.schema_version(con) == store.LATEST_VERSION >= 6
        row = con.execute("SELECT cost_basis, cost_usd, tokens FROM v_attempt_costs").fetchall()
    assert row == [("unpriced", 0.0, 15)]


def test_the_budget_step_reads_the_snapshot_and_reduces_only_over_budget(
    tmp_db: str, rounds: list[tuple[RoundInfo, list[Attempt], list[Endpoint]]]
) -> None:
    from tasks.config import CanaryConfig
    from tasks.core.budget import FULL
    from tasks.core.settle import Prior
    from tasks.core.types import ContractResult, EndpointState, Outcome
    from tasks.round.footprint import plan_footprint

    model = MODELS[0]
    info = rounds[len(rounds) // 2 - 1][0]  # the first model's last round
    prior = Prior(
        model=model, mode=Mode.OBSERVE,
        states={"deepinfra/fp8": EndpointState(model, "deepinfra/fp8", clean_streak=9),
                "together": EndpointState(model, "together", fail_streak=1, clean_streak=0)},
        previous_results=tuple(
            ContractResult(info.round_id, model, t, Contract.TTFT, o, "r", "e", ())
            for t, o in (("deepinfra/fp8", Outcome.PASS), ("together", Outcome.FAIL))
        ),
    )
    now = T0 + timedelta(hours=4)
    cfg = CanaryConfig(db_path=tmp_db, models=MODELS)
    assert plan_footprint(cfg, prior, model, now) == FULL  # no budget
    over = plan_footprint(CanaryConfig(db_path=tmp_db, models=MODELS, budget_usd_per_day=0.01), prior, model, now)
    assert over.skip_confirmations and over.skip_tags == {"deepinfra/fp8"} and over.protected == {"together"}
    assert over.alert is not None and over.alert.key == "budget|2026-11-02"
    within = CanaryConfig(db_path=tmp_db, models=MODELS, budget_usd_per_day=1000.0)
    assert plan_footprint(within, prior, model, now) == FULL
    missing = CanaryConfig(db_path=tmp_db + ".none", budget_usd_per_day=0.01)
    assert plan_footprint(missing, prior, model, now) == FULL  # no store: probe in full


def test_a_confirmation_round_after_the_full_ones_is_not_taken_for_the_schedules_round(
    tmp_db: str, rounds: list[tuple[RoundInfo, list[Attempt], list[Endpoint]]]
) -> None:
    """Right after an install (issue 44): a confirmation round probing one endpoint came last, and `canary status`
    projected today's spend so far ($0.0238/day) instead of a day of rounds (~$0.58)."""
    model = MODELS[0]
    last_full = [rc for rc in rounds if rc[0].model == model][-1]
    info = RoundInfo(f"{model}@confirm", model, last_full[0].round_ts + timedelta(minutes=5), Mode.OBSERVE,
                     partial=True)
    one = [Attempt(round_id=info.round_id, model=model, tag="deepinfra/fp8", provider_name="Deepinfra/Fp8",
                   contract=Contract.REFUSAL, attempt_no=1, started_at=info.round_ts,
                   usage=Usage(100, 50, 150, 1e-6))]
    with store.open_store(tmp_db) as con:
        store.land_round(con, info, one, endpoints=endpoints(model), status="complete")
        con.execute("UPDATE rounds SET partial = true WHERE round_id = ?", [info.round_id])  # as the save marks it
        p = store.read_projection(con, info.round_ts + timedelta(minutes=1), 30, [model])
    full_usd = round_cost(last_full[0].round_id, model, *last_full[1:]).total.usd
    assert p.last_rounds_usd_per_day == pytest.approx(full_usd * 48 + 1e-6)
    assert p.usd_per_day == pytest.approx(full_usd * 48 + 1e-6) and p.usd_per_day > 40 * full_usd
