"""The daily budget (tasks/core/budget.py): the order in which the footprint is lowered, and what it never does."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.core.budget import FULL, HEALTHY_CLEAN_ROUNDS, Footprint, Projection, footprint, project
from tasks.core.types import EndpointState, RoundStatus

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MODEL = "m/x"


def state(tag: str, *, fail: int = 0, clean: int = 0, suspended: bool = False) -> EndpointState:
    return EndpointState(model=MODEL, tag=tag, fail_streak=fail, clean_streak=clean,
                         suspended_until=NOW + timedelta(days=1) if suspended else None)


STATES = {
    "healthy": state("healthy", clean=HEALTHY_CLEAN_ROUNDS),
    "young": state("young", clean=HEALTHY_CLEAN_ROUNDS - 1),
    "failing": state("failing", fail=1),
    "suspended": state("suspended", clean=HEALTHY_CLEAN_ROUNDS, suspended=True),
    "control": state("control", clean=10),
    "skipped-last": state("skipped-last", clean=10),
}
LAST = {t: RoundStatus.CLEAN for t in ("healthy", "young", "suspended", "control")} | {"failing": RoundStatus.FAIL}


def run(usd: float, budget: float, confirmations: float = 0.0) -> Footprint:
    return footprint(Projection(usd, usd, usd, confirmations), budget, STATES, LAST, model=MODEL, now=NOW,
                     keep=frozenset({"control"}))


def test_within_budget_or_without_one_nothing_is_reduced() -> None:
    assert run(4.0, 5.0) == FULL and run(5.0, 5.0) == FULL
    assert run(1e9, 0.0) == FULL


def test_step_one_alone_when_dropping_confirmations_is_enough() -> None:
    fp = run(6.0, 5.0, confirmations=1.5)
    assert fp.skip_confirmations and fp.skip_tags == frozenset()
    assert fp.protected == {"failing", "suspended"}
    assert not fp.confirms("healthy") and fp.confirms("failing") and fp.confirms("suspended")


def test_step_two_skips_only_healthy_endpoints_probed_last_round() -> None:
    fp = run(6.0, 5.0, confirmations=0.5)
    # young: not clean long enough; control: kept; skipped-last: not probed last round, so probed now.
    assert fp.skip_confirmations and fp.skip_tags == {"healthy"}


def test_one_alert_per_day_with_the_figures() -> None:
    fp = run(6.0, 5.0)
    assert fp.alert is not None and fp.alert.kind == "budget" and fp.alert.key == "budget|2026-11-01"
    assert "projected $6.0000/day > budget_usd_per_day $5.0000" in fp.alert.text
    assert "every other round (1 skipped" in fp.alert.text
    later = footprint(Projection(7.0), 5.0, STATES, LAST, model="other/model", now=NOW + timedelta(hours=3))
    assert later.alert is not None and later.alert.key == fp.alert.key  # the outbox sends a key once
    assert json.loads(fp.alert.blocks_json)[0]["type"] == "header"


def test_projection_is_the_larger_of_last_day_and_last_rounds() -> None:
    p = project(2.0, {"a": 0.01, "b": 0.02}, {"a": 0.005}, 30)
    assert p.last_rounds_usd_per_day == pytest.approx(0.03 * 48)
    assert p.usd_per_day == pytest.approx(2.0) and p.confirmations_usd_per_day == pytest.approx(0.24)
    assert project(0.1, {"a": 0.02}, {}, 60).usd_per_day == pytest.approx(0.48)


TAGS = [f"t{i}" for i in range(6)]
states_st = st.dictionaries(
    st.sampled_from(TAGS),
    st.builds(
        lambda fail, clean, suspended: (fail, clean, suspended),
        st.integers(0, 3), st.integers(0, 8), st.booleans(),
    ),
)
statuses_st = st.dictionaries(st.sampled_from(TAGS), st.sampled_from(list(RoundStatus)))
money = st.floats(0, 1000, allow_nan=False)


def build(raw: dict[str, tuple[int, int, bool]]) -> dict[str, EndpointState]:
    return {t: state(t, fail=f, clean=c, suspended=s) for t, (f, c, s) in raw.items()}


@settings(max_examples=300, deadline=None)
@given(raw=states_st, last=statuses_st, usd=money, budget=money, confirmations=money)
def test_never_skips_or_unconfirms_a_suspended_or_failing_endpoint(
    raw: dict[str, tuple[int, int, bool]], last: dict[str, RoundStatus], usd: float, budget: float,
    confirmations: float,
) -> None:
    states = build(raw)
    fp = footprint(Projection(usd, confirmations_usd_per_day=confirmations), budget, states, last, model=MODEL,
                   now=NOW)
    for tag in set(states) | set(last):
        s = states.get(tag)
        failing = (s is not None and (s.is_suspended or s.fail_streak > 0)) or last.get(tag) is RoundStatus.FAIL
        if failing:
            assert tag not in fp.skip_tags and fp.confirms(tag)
        if tag in fp.skip_tags:  # only endpoints probed (and clean) last round: never two rounds in a row
            assert last.get(tag) is RoundStatus.CLEAN
    assert fp.is_reduced == (budget > 0 and usd > budget)


@settings(max_examples=200, deadline=None)
@given(raw=states_st, last=statuses_st, usd=money)
def test_no_budget_never_reduces(raw: dict[str, tuple[int, int, bool]], last: dict[str, RoundStatus],
                                 usd: float) -> None:
    fp = footprint(Projection(usd), 0.0, build(raw), last, model=MODEL, now=NOW)
    assert fp == FULL and fp.alert is None and all(fp.confirms(t) for t in TAGS)


def test_last_round_statuses_follow_the_design_order() -> None:
    from tasks.core.budget import last_round_statuses
    from tasks.core.types import Contract, ContractResult, Outcome

    def r(tag: str, outcome: Outcome, contract: Contract = Contract.TTFT) -> ContractResult:
        return ContractResult("r", MODEL, tag, contract, outcome, "x", "", ())

    results = [r("a", Outcome.PASS), r("a", Outcome.FAIL, Contract.REFUSAL), r("b", Outcome.PASS),
               r("b", Outcome.TRANSPORT, Contract.REFUSAL), r("c", Outcome.PASS),
               r("c", Outcome.INCONCLUSIVE, Contract.REFUSAL), r("d", Outcome.INCONCLUSIVE)]
    assert last_round_statuses(results) == {"a": RoundStatus.FAIL, "b": RoundStatus.TRANSPORT,
                                            "c": RoundStatus.CLEAN, "d": RoundStatus.INCONCLUSIVE}


def test_the_footprints_alert_is_settled_with_the_round_and_kept_when_it_settles_again() -> None:
    """The budget alert is an input of settling (tasks/core/settle.py), not grafted onto its result: a round
    settled again on a fresh prior (the save window) still carries it."""
    from tasks.config import CanaryConfig
    from tasks.core.judge import judge_round
    from tasks.core.settle import Prior, settle_judged, settle_round
    from tasks.core.types import Endpoint

    alert = run(6.0, 5.0).alert
    assert alert is not None
    eps = [Endpoint(MODEL, t, t.title()) for t in ("a", "b")]
    cfg = CanaryConfig(models=(MODEL,))
    from tasks.core.render.links import AlertLinks, with_links

    linked = with_links(alert, AlertLinks())  # every alert of a round carries its links line (its runbook here)
    settled = settle_round(Prior(model=MODEL, mode=cfg.mode), [], eps, cfg, NOW, extra_alerts=(alert,))
    assert settled.extra_alerts == (linked,) and linked not in settled.alerts
    again = settle_judged(Prior(model=MODEL, mode=cfg.mode, decided_until=NOW), judge_round([], eps, cfg), [], eps,
                          cfg, NOW, round_id=settled.info.round_id, extra_alerts=settled.extra_alerts)
    assert again.extra_alerts == (linked,)  # once: settling again adds no second links line
