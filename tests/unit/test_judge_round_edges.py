"""Edges of judging a round (tasks/core/judge.py): results in discovery order (an endpoint discovery did not list
last), each weak control named, the pin evidence kept per tag, and a round's rows naming its model and round."""

from __future__ import annotations

import pytest

from tasks.config import CanaryConfig
from tasks.core.judge import judge_round
from tasks.core.types import Contract, Outcome
from tests.unit.test_judge import attempt, ep, healthy  # test_judge puts tests/unit/contracts on the path

pytestmark = pytest.mark.unit


def test_results_follow_discovery_order_and_an_unlisted_endpoint_comes_last() -> None:
    attempts = healthy("alpha") + healthy("zeta") + healthy("mid")
    out = judge_round(attempts, [ep("zeta"), ep("alpha")], CanaryConfig())
    assert list(dict.fromkeys(r.tag for r in out.results)) == ["zeta", "alpha", "mid"]
    assert {(r.model, r.round_id) for r in out.results} == {("m/x", "r1")}


def test_each_passing_control_is_named_in_a_weak_probes_evidence() -> None:
    cfg = CanaryConfig(refusal_controls=("ctl-a", "ctl-b"))
    out = judge_round(healthy("alpha") + healthy("ctl-a") + healthy("ctl-b"),
                      [ep("alpha"), ep("ctl-a"), ep("ctl-b")], cfg)
    row = next(r for r in out.results if r.tag == "alpha" and r.contract == Contract.REFUSAL)
    assert (row.outcome, row.evidence) == (Outcome.INCONCLUSIVE, "controls passed (ctl-a, ctl-b); was pass ok")
    control = next(r for r in out.results if r.tag == "ctl-a" and r.contract == Contract.REFUSAL)
    assert control.reason == "control_missed"


def test_the_first_pin_mismatch_of_a_tag_is_its_evidence() -> None:
    attempts = healthy("alpha")
    attempts[0] = attempt(Contract.TTFT, tag="alpha", provider_name="Alpha", served_provider="Beta", text="x")
    attempts[1] = attempt(Contract.REFUSAL, tag="alpha", provider_name="Alpha", served_provider="Gamma", text="")
    out = judge_round(attempts, [ep("alpha")], CanaryConfig())
    assert out.findings.pin_evidence == {"alpha": "served_provider (Beta) != Alpha"}
