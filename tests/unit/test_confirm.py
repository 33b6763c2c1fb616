"""Confirmation rounds, the pure part: which endpoints and contracts a settled round asks to probe again, and
how a partial round settles (tasks/core/confirm.py, tasks/core/settle.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tasks.config import CanaryConfig
from tasks.config.loading import apply_overrides, config_from_mapping
from tasks.core.confirm import (
    contracts_to_probe,
    hard_failures,
    narrow_probes,
    parse_contracts,
    select_confirmation,
)
from tasks.core.judge import RoundFindings, RoundJudgement
from tasks.core.plan import make_round_id, plan_probes
from tasks.core.settle import Prior, Settlement, settle_judged
from tasks.core.types import (
    Action,
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    Mode,
    OperationalExclusion,
    Outcome,
)
from tasks.errors import ConfigError

pytestmark = pytest.mark.unit
MODEL = "acme/model"
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
TAGS = ("alpha", "beta", "gamma", "delta", "control")
CFG = CanaryConfig(models=(MODEL,), mode=Mode.ENFORCE, refusal_controls=("control",))
C = Contract


def endpoints(tags: tuple[str, ...] = TAGS) -> list[Endpoint]:
    return [Endpoint(MODEL, t, t.title(), supported_parameters=("tools",)) for t in tags]


def results(ts: datetime, outcomes: dict[str, dict[Contract, Outcome]]) -> RoundJudgement:
    """Every endpoint passes every contract except what `outcomes` says."""
    rid = make_round_id(MODEL, ts)
    rows = []
    for tag, per in outcomes.items():
        for contract in (C.TTFT, C.REFUSAL, C.STRUCTURED, C.LANGUAGE, C.OPENING):
            outcome = per.get(contract, Outcome.PASS)
            reason = "control_caught" if tag == "control" and contract is C.REFUSAL else "x"
            if tag == "control" and contract is C.REFUSAL:
                outcome = Outcome.INCONCLUSIVE
            rows.append(ContractResult(rid, MODEL, tag, contract, outcome, reason))
    return RoundJudgement(rows, RoundFindings())


def settle(outcomes: dict[str, dict[Contract, Outcome]], *, prior: Prior | None = None, ts: datetime = T0,
           cfg: CanaryConfig = CFG, tags: tuple[str, ...] = TAGS, partial: bool = False) -> Settlement:
    prior = prior or Prior(model=MODEL, mode=Mode.ENFORCE)
    full = {t: {} for t in tags} | {t: o for t, o in outcomes.items() if t in tags}
    return settle_judged(prior, results(ts, full), [], endpoints(tags), cfg, ts,
                         round_id=make_round_id(MODEL, ts), partial=partial)


def test_a_hard_failure_asks_for_a_confirmation_of_that_endpoint_and_contract_only() -> None:
    settled = settle({"beta": {C.STRUCTURED: Outcome.FAIL}})
    request = select_confirmation(settled, CFG)
    assert request is not None
    assert dict(request.contracts) == {"beta": (C.STRUCTURED,)}
    assert request.due == T0 + timedelta(minutes=5)
    assert request.confirms == make_round_id(MODEL, T0)
    assert request.parameters() == {"model": MODEL, "only": ["beta"], "contracts": {"beta": ["structured"]},
                                    "confirms": make_round_id(MODEL, T0)}


@pytest.mark.parametrize("outcome", [Outcome.TRANSPORT, Outcome.INCONCLUSIVE, Outcome.PASS])
def test_no_confirmation_without_a_hard_failure(outcome: Outcome) -> None:
    assert select_confirmation(settle({"beta": {C.STRUCTURED: outcome}}), CFG) is None


def test_ttft_is_never_hard_even_if_configured_so_by_a_caller() -> None:
    settled = settle({"beta": {C.TTFT: Outcome.FAIL}})
    assert select_confirmation(settled, CFG) is None
    assert hard_failures(settled.results, ("ttft", "structured")) == {}


def test_opening_is_confirmed_through_the_text_contracts() -> None:
    request = select_confirmation(settle({"gamma": {C.OPENING: Outcome.FAIL}}), CFG)
    assert request is not None
    # refusal is among the text contracts, so the positive control is probed for refusal too
    assert dict(request.contracts) == {"gamma": (C.TTFT, C.REFUSAL, C.LANGUAGE), "control": (C.REFUSAL,)}
    assert contracts_to_probe([C.OPENING, C.STRUCTURED]) == (C.TTFT, C.REFUSAL, C.STRUCTURED, C.LANGUAGE)


def test_a_refusal_confirmation_probes_the_positive_controls() -> None:
    request = select_confirmation(settle({"alpha": {C.REFUSAL: Outcome.FAIL},
                                          "delta": {C.LANGUAGE: Outcome.FAIL}}), CFG)
    assert request is not None
    assert dict(request.contracts) == {"alpha": (C.REFUSAL,), "control": (C.REFUSAL,), "delta": (C.LANGUAGE,)}
    no_refusal = select_confirmation(settle({"delta": {C.LANGUAGE: Outcome.FAIL}}), CFG)
    assert no_refusal is not None and "control" not in no_refusal.contracts


def test_hard_contracts_are_configurable() -> None:
    cfg = CanaryConfig(models=(MODEL,), mode=Mode.ENFORCE, hard_contracts=("structured",))
    assert select_confirmation(settle({"beta": {C.LANGUAGE: Outcome.FAIL}}, cfg=cfg), cfg) is None
    assert select_confirmation(settle({"beta": {C.STRUCTURED: Outcome.FAIL}}, cfg=cfg), cfg) is not None


def test_off_when_confirm_after_min_is_zero() -> None:
    cfg = CanaryConfig(models=(MODEL,), mode=Mode.ENFORCE, confirm_after_min=0)
    assert select_confirmation(settle({"beta": {C.STRUCTURED: Outcome.FAIL}}, cfg=cfg), cfg) is None


def test_an_endpoint_suspended_by_this_round_or_already_is_not_confirmed() -> None:
    failing = {"beta": {C.STRUCTURED: Outcome.FAIL}}
    second = Prior(model=MODEL, mode=Mode.ENFORCE,
                   states={"beta": EndpointState(MODEL, "beta", Mode.ENFORCE, fail_streak=1, fail_rounds=("r1",))})
    settled = settle(failing, prior=second)
    assert [d.action for d in settled.decisions] == [Action.SUSPEND]
    assert select_confirmation(settled, CFG) is None
    suspended = Prior(model=MODEL, mode=Mode.ENFORCE, states={"beta": EndpointState(
        MODEL, "beta", Mode.ENFORCE, suspended_until=T0 + timedelta(days=1), suspended_at=T0, ladder_step=1)})
    assert select_confirmation(settle(failing, prior=suspended), CFG) is None


def test_floor_blocked_and_excluded_endpoints_are_not_confirmed() -> None:
    cfg = CanaryConfig(models=(MODEL,), mode=Mode.ENFORCE, min_hosts=10)
    blocked = Prior(model=MODEL, mode=Mode.ENFORCE,
                    states={"beta": EndpointState(MODEL, "beta", Mode.ENFORCE, fail_streak=1, fail_rounds=("r1",))})
    settled = settle({"beta": {C.STRUCTURED: Outcome.FAIL}}, prior=blocked, cfg=cfg)
    assert [d.action for d in settled.decisions] == [Action.FLOOR_BLOCKED]
    assert select_confirmation(settled, cfg) is None
    excluded = Prior(model=MODEL, mode=Mode.ENFORCE, operational=(
        OperationalExclusion("beta", "known", "oncall", T0 - timedelta(hours=1), MODEL),))
    assert select_confirmation(settle({"beta": {C.STRUCTURED: Outcome.FAIL}}, prior=excluded), CFG) is None


def test_a_round_already_decided_asks_for_nothing() -> None:
    rerun = Prior(model=MODEL, mode=Mode.ENFORCE, decided_until=T0)
    settled = settle({"beta": {C.STRUCTURED: Outcome.FAIL}}, prior=rerun)
    assert not settled.decided
    assert select_confirmation(settled, CFG) is None


def test_a_partial_round_counts_the_last_full_rounds_endpoints_for_the_floor() -> None:
    """Only beta is probed; the others are absent (frozen) but still discovered, so the floor allows it."""
    cfg = CanaryConfig(models=(MODEL,), mode=Mode.ENFORCE, min_hosts=2)
    state = EndpointState(MODEL, "beta", Mode.ENFORCE, fail_streak=1, fail_rounds=("r1",))
    others = {t: EndpointState(MODEL, t, Mode.ENFORCE, clean_streak=1) for t in TAGS if t != "beta"}
    prior = Prior(model=MODEL, mode=Mode.ENFORCE, states={"beta": state, **others}, last_full_tags=TAGS)
    ts = T0 + timedelta(minutes=5)
    settled = settle({"beta": {C.STRUCTURED: Outcome.FAIL}}, prior=prior, ts=ts, cfg=cfg, tags=("beta",),
                     partial=True)
    assert settled.info.partial
    assert dict(settled.statuses) == {"beta": "fail"}
    assert [(d.tag, d.action) for d in settled.decisions] == [("beta", Action.SUSPEND)]
    assert {t: settled.states[t] for t in others} == others  # absent: frozen, untouched
    assert settled.ignore.ignore == ("beta",)
    # the same round without the last full round's endpoints would see no other host: floor_blocked
    alone = settle({"beta": {C.STRUCTURED: Outcome.FAIL}}, prior=Prior(
        model=MODEL, mode=Mode.ENFORCE, states={"beta": state}), ts=ts, cfg=cfg, tags=("beta",), partial=True)
    assert [d.action for d in alone.decisions] == [Action.FLOOR_BLOCKED]


def test_parse_and_narrow_the_probes_of_a_confirmation_round() -> None:
    assert parse_contracts(None, None) is None
    plan = parse_contracts(["beta", "gamma"], {"beta": ["structured"], "gamma": ["language", "refusal"]})
    assert plan == {"beta": (C.STRUCTURED,), "gamma": (C.REFUSAL, C.LANGUAGE)}
    probes = plan_probes(endpoints(), ("en", "fr"), {})
    kept = narrow_probes(probes, plan)
    assert sorted((p.endpoint.tag, str(p.contract)) for p in kept) == [
        ("beta", "structured"), ("gamma", "language"), ("gamma", "refusal")]
    language = {p.endpoint.tag: p.language for p in probes if p.contract is C.LANGUAGE}
    assert [p.language for p in kept if p.contract is C.LANGUAGE] == [language["gamma"]]  # same rotation
    assert narrow_probes(probes, None) == probes
    assert parse_contracts(["beta"], None) == {"beta": tuple(c for c in C if c is not C.OPENING)}
    with pytest.raises(ValueError):
        parse_contracts(["beta"], {"beta": ["nonsense"]})


def test_config_validation() -> None:
    assert config_from_mapping({}).confirm_after_min == 5
    assert config_from_mapping({"hard_contracts": ["structured"]}).hard_contracts == ("structured",)
    assert config_from_mapping({"hard_contracts": []}).hard_contracts == ()
    assert config_from_mapping({"confirm_after_min": 0}).confirm_after_min == 0
    for raw, message in (
        ({"confirm_after_min": 30}, "confirm_after_min .30. must be < interval_min .30."),
        ({"confirm_after_min": -1}, "confirm_after_min must be between 0 and"),
        ({"hard_contracts": ["ttft"]}, "hard_contracts entries must be among"),
        ({"hard_contracts": ["transport"]}, "hard_contracts entries must be among"),
    ):
        with pytest.raises(ConfigError, match=message):
            config_from_mapping(raw)
    assert apply_overrides(CanaryConfig(), {"hard_contracts": "language,opening"}).hard_contracts == (
        "language", "opening")
