"""Round status has one rule (docs/design.md "round status"), computed twice: in pandas
(tasks/core/verdicts.py, what the policy is fed and what `complete_round` records) and in SQL
(`v_endpoint_rounds.derived_status`, what analysts, `canary at` and `canary replay` read when nothing was
recorded). The two must agree on every endpoint of every round.

Generated rounds (two models, tags that differ only in case, trailing space or Unicode normalisation,
endpoints with any subset of contracts and any outcomes, undiscovered endpoints with outcomes, discovered
ones with none, statuses recorded or not) are landed in a real DuckDB file through the store's own
functions (land_round, land_outcomes, complete_round: what save_settlement calls), then the view is read back.

The pandas frame has no row for a discovered endpoint that no contract judged (the policy sees it absent);
the view shows it `inconclusive` (replay reads every status line as discovered). Both freeze the streaks
and count the endpoint as discovered, so the policy decides the same from either encoding: checked too.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tasks import store
from tasks.core.budget import last_round_statuses
from tasks.core.policy import PolicyConfig, RoundInput, decide
from tasks.core.render.markdown import round_status as markdown_status
from tasks.core.types import (
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    Mode,
    Outcome,
    RoundInfo,
    RoundStatus,
)
from tasks.core.verdicts import results_frame, round_status, status_map
from tasks.store.rows import Connection
from tasks.store.views import V_ENDPOINT_ROUNDS_3

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MODELS = ("meta-llama/llama-3.3-70b-instruct", "qwen/qwen3-32b")
#: Tags equal under a careless collation or normalisation: each must stay its own endpoint.
TRICKY_TAGS = ("deepinfra/fp8", "DeepInfra/FP8", "novita", "novita ", "caf\u00e9", "cafe\u0301")

Key = tuple[str, str, str]  # (round_id, model, tag)


@dataclass(frozen=True)
class EndpointCase:
    tag: str
    discovered: bool  # listed by the round's discovery (round_endpoints)
    outcomes: tuple[tuple[Contract, Outcome, str], ...]  # the contracts judged, with a reason; missing = none
    fail_streak: int = 0  # the policy state before the round (for the decide() equivalence)
    clean_streak: int = 0


@dataclass(frozen=True)
class RoundCase:
    model: str
    endpoints: tuple[EndpointCase, ...]
    recorded: bool  # the flow recorded the pandas statuses (complete_round(statuses)); else the view derives


def _endpoint(tag: str, discovered: bool, outcomes: Mapping[Contract, tuple[Outcome, str]],
              fail_streak: int, clean_streak: int) -> EndpointCase:
    judged = tuple((c, o, r) for c, (o, r) in sorted(outcomes.items()))
    return EndpointCase(tag, discovered or not judged, judged, fail_streak, clean_streak)


tags = st.one_of(
    st.sampled_from(TRICKY_TAGS),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=6),
)
endpoint_cases = st.builds(
    _endpoint,
    tags,
    st.booleans(),
    st.dictionaries(
        st.sampled_from(list(Contract)),
        st.tuples(st.sampled_from(list(Outcome)), st.sampled_from(["ok", "ttft_exceeded", "http_429", "", "a:b, c"])),
        max_size=len(Contract),
    ),
    st.integers(0, 2),
    st.integers(0, 3),
)
round_cases = st.builds(
    RoundCase,
    st.sampled_from(MODELS),
    st.lists(endpoint_cases, max_size=6, unique_by=lambda e: e.tag).map(tuple),
    st.booleans(),
)


def _results(round_id: str, case: RoundCase) -> list[ContractResult]:
    return [
        ContractResult(round_id, case.model, e.tag, c, o, reason, evidence=f"{reason} seen",
                       attempt_ids=(f"{round_id}:{e.tag}:{c}:1",))
        for e in case.endpoints
        for c, o, reason in e.outcomes
    ]


@dataclass(frozen=True)
class Landed:
    info: RoundInfo
    case: RoundCase
    results: list[ContractResult]


def land(con: Connection, cases: Sequence[RoundCase], ids: Iterator[int]) -> list[Landed]:
    """Land each case as a fresh round, the way the flow does (the recorded statuses are pandas')."""
    out: list[Landed] = []
    for case in cases:
        n = next(ids)
        info = RoundInfo(f"r{n}", case.model, T0 + timedelta(minutes=30 * n), Mode.OBSERVE)
        results = _results(info.round_id, case)
        store.land_round(con, info, [], endpoints=[
            Endpoint(case.model, e.tag, f"P {e.tag}") for e in case.endpoints if e.discovered
        ])
        store.land_outcomes(con, info.round_id, results)
        statuses = status_map(round_status(results_frame(results))) if case.recorded else None
        assert store.complete_round(con, info.round_id, statuses, at=info.round_ts + timedelta(minutes=2))
        out.append(Landed(info, case, results))
    return out


def view_rows(con: Connection, round_ids: Sequence[str]) -> dict[Key, dict[str, object]]:
    rows = con.execute(
        "SELECT round_id, model, tag, status, derived_status, status_recorded, contracts, discovered"
        " FROM v_endpoint_rounds WHERE list_contains(?, round_id)",
        [list(round_ids)],
    ).fetchall()
    names = ("status", "derived_status", "status_recorded", "contracts", "discovered")
    table = {(str(r[0]), str(r[1]), str(r[2])): dict(zip(names, r[3:], strict=True)) for r in rows}
    assert len(table) == len(rows), "the view has two rows for one endpoint and round"
    return table


def pandas_statuses(landed: Sequence[Landed]) -> dict[Key, str]:
    frame = round_status(results_frame([r for x in landed for r in x.results]))
    return {
        (str(rid), str(model), str(tag)): str(status)
        for rid, model, tag, status in zip(frame["round_id"], frame["model"], frame["tag"], frame["status"],
                                           strict=True)
    }


def check_agreement(con: Connection, cases: Sequence[RoundCase], ids: Iterator[int]) -> None:
    landed = land(con, cases, ids)
    view = view_rows(con, [x.info.round_id for x in landed])
    expected = pandas_statuses(landed)

    judged = {k: str(v["derived_status"]) for k, v in view.items() if v["contracts"]}
    assert judged == expected  # every judged endpoint and round: same keys, same status
    for x in landed:
        _the_view_agrees_with_the_round(x, view)
        # The other places that state the rule agree with pandas.
        live = status_map(round_status(results_frame(x.results)))
        assert last_round_statuses(x.results) == live
        for e in x.case.endpoints:
            if e.outcomes:
                mine = [r for r in x.results if r.tag == e.tag]
                assert markdown_status(mine) == str(live[e.tag])
        rid = x.info.round_id
        assert_same_decisions(x, live, {t: RoundStatus(str(view[(rid, x.case.model, t)]["status"]))
                                        for (r, _, t) in view if r == rid})


def _the_view_agrees_with_the_round(x: Landed, view: Mapping[Key, Mapping[str, object]]) -> None:
    """Every endpoint of the round: discovered as landed, recorded status = the one SQL derives; those never judged
    are rows without contracts, inconclusive."""
    rid, model = x.info.round_id, x.case.model
    unjudged = {e.tag for e in x.case.endpoints if not e.outcomes}
    for e in x.case.endpoints:
        row = view[(rid, model, e.tag)]
        assert row["discovered"] is e.discovered
        assert row["status"] == row["derived_status"]  # what was recorded is what SQL derives
        assert row["status_recorded"] is (x.case.recorded and bool(e.outcomes))
    assert {t for (r, _, t), v in view.items() if r == rid and not v["contracts"]} == unjudged
    assert all(view[(rid, model, t)]["derived_status"] == "inconclusive" for t in unjudged)


def assert_same_decisions(x: Landed, live: Mapping[str, RoundStatus], replayed: Mapping[str, RoundStatus]) -> None:
    """The live round (pandas statuses, discovered tags) and replay (the view's status lines, each tag
    discovered) decide the same for every endpoint."""
    cfg = PolicyConfig(fail_rounds=2, restore_rounds=2, min_hosts=1, mode=Mode.ENFORCE)
    states = {
        e.tag: EndpointState(x.case.model, e.tag, Mode.ENFORCE, fail_streak=e.fail_streak,
                             clean_streak=e.clean_streak)
        for e in x.case.endpoints
    }
    info = x.info
    discovered = tuple(sorted(e.tag for e in x.case.endpoints if e.discovered))
    by_live = decide(states, RoundInput(info.round_id, info.round_ts, info.model, live, discovered), cfg)
    by_view = decide(states, RoundInput(info.round_id, info.round_ts, info.model, replayed, tuple(replayed)), cfg)
    assert by_live == by_view


def _case(model: str, *endpoints: tuple[str, str], recorded: bool = False) -> RoundCase:
    """Endpoints as (tag, outcome letters): p pass, f fail, t transport, i inconclusive; '' = discovered,
    never judged. Contracts in Contract order."""
    names = {"p": Outcome.PASS, "f": Outcome.FAIL, "t": Outcome.TRANSPORT, "i": Outcome.INCONCLUSIVE}
    return RoundCase(model, tuple(
        EndpointCase(tag, True, tuple((c, names[o], "r") for c, o in zip(Contract, letters, strict=False)))
        for tag, letters in endpoints
    ), recorded)


@pytest.fixture
def con(tmp_db: str) -> Iterator[Connection]:
    """One DuckDB file per test function; examples use fresh round ids, so nothing is deleted between them."""
    with store.open_store(tmp_db, snapshot=False) as connection:
        yield connection


def test_view_and_pandas_agree_on_generated_rounds(con: Connection) -> None:
    ids = itertools.count(1)

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(round_cases, min_size=1, max_size=2))
    @example([_case(MODELS[0], ("DeepInfra/FP8", "f"), ("deepinfra/fp8", "p"), ("novita", ""))])
    @example([_case(MODELS[0], ("x", "ti")), _case(MODELS[1], ("x", "ip"), recorded=True)])
    def check(cases: list[RoundCase]) -> None:
        with store.transaction(con):  # one commit per example, as save_settlement lands a round
            check_agreement(con, cases, ids)

    check()


@pytest.mark.parametrize(
    ("letters", "status"),
    [
        ("pftip", "fail"),  # fail wins over everything
        ("itpip", "transport"),  # transport wins over pass and inconclusive
        ("ipi", "clean"),  # one pass and nothing worse
        ("ii", "inconclusive"),  # nothing but inconclusive
        ("f", "fail"),
        ("t", "transport"),
        ("p", "clean"),
        ("i", "inconclusive"),
    ],
)
@pytest.mark.parametrize("recorded", [False, True])
def test_golden_status_per_rule(con: Connection, letters: str, status: str, recorded: bool) -> None:
    [landed] = land(con, [_case(MODELS[0], ("deepinfra/fp8", letters), recorded=recorded)], itertools.count(1))
    view = view_rows(con, [landed.info.round_id])
    key = (landed.info.round_id, MODELS[0], "deepinfra/fp8")
    assert pandas_statuses([landed]) == {key: status}
    assert view[key]["derived_status"] == view[key]["status"] == status
    assert view[key]["status_recorded"] is recorded


def test_golden_discovered_but_never_judged_is_inconclusive_in_sql_and_absent_in_pandas(con: Connection) -> None:
    case = _case(MODELS[0], ("novita", ""), ("deepinfra/fp8", "f"), recorded=True)
    [landed] = land(con, [case], itertools.count(1))
    view = view_rows(con, [landed.info.round_id])
    rid = landed.info.round_id
    assert pandas_statuses([landed]) == {(rid, MODELS[0], "deepinfra/fp8"): "fail"}
    assert view[(rid, MODELS[0], "novita")] == {
        "status": "inconclusive", "derived_status": "inconclusive", "status_recorded": False, "contracts": 0,
        "discovered": True,
    }
    check_agreement(con, [case], itertools.count(2))  # and the policy decides the same from both


def test_a_view_with_another_rule_is_caught(con: Connection) -> None:
    """The comparison is not vacuous: a view that ranked transport over fail disagrees on this round."""
    fail_first = "WHEN coalesce(oc.fails, 0) > 0 THEN 'fail'"
    transport_next = "WHEN coalesce(oc.transports, 0) > 0 THEN 'transport'"
    assert fail_first in V_ENDPOINT_ROUNDS_3 and transport_next in V_ENDPOINT_ROUNDS_3
    swapped = (V_ENDPOINT_ROUNDS_3.replace(fail_first, "@").replace(transport_next, fail_first)
               .replace("@", transport_next))
    con.execute(swapped)
    with pytest.raises(AssertionError):
        check_agreement(con, [_case(MODELS[0], ("deepinfra/fp8", "ft"))], itertools.count(1))
