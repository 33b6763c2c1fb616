"""What a round costs (tasks/core/cost.py), the listed pricing discovery parses, and the budget key."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tasks.config import CanaryConfig
from tasks.config.loading import apply_overrides, config_from_mapping
from tasks.core.cost import CostBasis, CostTotals, attempt_cost, describe_totals, format_usd, round_cost
from tasks.core.render import render_round_markdown
from tasks.core.types import Attempt, Contract, Endpoint, Mode, RoundInfo, Usage
from tasks.errors import ConfigError
from tasks.probe.discover import parse_endpoints

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
MODEL = "m/x"
PRICED = Endpoint(MODEL, "priced", "P", prompt_price_usd=1e-6, completion_price_usd=3e-6, request_price_usd=1e-4)
UNLISTED = Endpoint(MODEL, "unlisted", "U")


def attempt(tag: str, usage: Usage, contract: Contract = Contract.TTFT, n: int = 1) -> Attempt:
    return Attempt(round_id="r1", model=MODEL, tag=tag, provider_name=tag, contract=contract, attempt_no=n,
                   started_at=T0, usage=usage)


@pytest.mark.parametrize(
    ("endpoint", "usage", "basis", "usd", "tokens"),
    [
        (PRICED, Usage(100, 20, 120, 0.5), CostBasis.REPORTED, 0.5, 120),
        (PRICED, Usage(100, 20, 120, 0.0), CostBasis.REPORTED, 0.0, 120),  # a free model reports 0
        (PRICED, Usage(100, 20, 120, None), CostBasis.ESTIMATED, 100e-6 + 60e-6 + 1e-4, 120),
        (PRICED, Usage(100, None, None, None), CostBasis.ESTIMATED, 100e-6 + 1e-4, 100),
        (PRICED, Usage(), CostBasis.UNPRICED, 0.0, 0),  # no usage at all (a refused connection)
        (UNLISTED, Usage(100, 20, 120, None), CostBasis.UNPRICED, 0.0, 120),
        (None, Usage(100, 20, None, None), CostBasis.UNPRICED, 0.0, 120),
    ],
    ids=["reported", "reported-zero", "estimated", "estimated-prompt-only", "no-usage", "no-pricing",
         "not-discovered"],
)
def test_attempt_cost(endpoint: Endpoint | None, usage: Usage, basis: CostBasis, usd: float, tokens: int) -> None:
    c = attempt_cost(attempt("priced", usage), endpoint)
    assert (c.basis, c.tokens) == (basis, tokens)
    assert c.usd == pytest.approx(usd)


def test_round_cost_sums_per_endpoint_and_counts_confirmations() -> None:
    attempts = [
        attempt("priced", Usage(10, 5, 15, 0.01)),
        attempt("priced", Usage(10, 5, 15, None), Contract.LANGUAGE, 1),
        attempt("priced", Usage(10, 5, 15, 0.02), Contract.LANGUAGE, 2),
        attempt("priced", Usage(10, 5, 15, 0.02), Contract.LANGUAGE, 3),
        attempt("priced", Usage(10, 5, 15, 0.04), Contract.TOOLS, 2),  # the tools control turn: no confirmation
        attempt("unlisted", Usage()),
    ]
    cost = round_cost("r1", MODEL, attempts, [PRICED, UNLISTED])
    estimated = 10e-6 + 15e-6 + 1e-4
    assert cost.total == CostTotals(
        requests=6, prompt_tokens=50, completion_tokens=25, tokens=75, reported_usd=pytest.approx(0.09),
        estimated_usd=pytest.approx(estimated), estimated_requests=1, unpriced_requests=1,
    )
    assert cost.by_tag["priced"].requests == 5 and cost.by_tag["unlisted"] == CostTotals(1, unpriced_requests=1)
    assert cost.confirmations_usd == pytest.approx(0.04)
    assert cost.total.estimated_share == pytest.approx(estimated / (0.09 + estimated))


def test_describe_totals_is_one_line() -> None:
    t = CostTotals(75, 30000, 1204, 31204, 0.0108, 0.0015, 3, 2)
    assert describe_totals(t) == "$0.0123 (75 requests, 31,204 tokens; 12% estimated; 2 without usage)"
    assert describe_totals(CostTotals()) == "$0 (0 requests, 0 tokens)"
    assert [format_usd(x) for x in (12.345, 0.5, 0.000123)] == ["$12.35", "$0.5000", "$0.000123"]


def test_the_round_artifact_has_a_cost_line() -> None:
    info = RoundInfo("r1", MODEL, T0, Mode.OBSERVE)
    cost = round_cost("r1", MODEL, [attempt("priced", Usage(10, 5, 15, 0.25))], [PRICED])
    md = render_round_markdown(info, [], [], None, [], cost)
    assert "- Cost of this round: $0.2500 (1 request, 15 tokens)\n" in md
    assert "Cost of this round" not in render_round_markdown(info, [], [], None, [])


def test_discovery_parses_listed_pricing_with_its_discount() -> None:
    payload = {"data": {"endpoints": [
        {"tag": "a", "provider_name": "A", "pricing": {"prompt": "0.000003", "completion": "0.000015",
                                                       "request": "0.0001", "discount": 0.5}},
        {"tag": "b", "provider_name": "B", "pricing": {"prompt": "free", "completion": -1}},
        {"tag": "c", "provider_name": "C"},
        {"tag": "d", "provider_name": "D", "pricing": {"prompt": 0, "completion": "0"}},
    ]}}
    a, b, c, d = parse_endpoints(MODEL, payload)
    assert (a.prompt_price_usd, a.completion_price_usd, a.request_price_usd) == pytest.approx(
        (1.5e-6, 7.5e-6, 5e-5))
    assert (b.prompt_price_usd, b.completion_price_usd, c.prompt_price_usd) == (None, None, None)
    assert (d.prompt_price_usd, d.completion_price_usd, d.request_price_usd) == (0.0, 0.0, None)


def test_budget_key_is_a_finite_non_negative_number() -> None:
    assert CanaryConfig().budget_usd_per_day == 0
    assert config_from_mapping({"budget_usd_per_day": 5}).budget_usd_per_day == 5.0
    assert apply_overrides(CanaryConfig(), {"budget_usd_per_day": "2.5"}).budget_usd_per_day == 2.5
    for bad in (-1, float("inf"), float("nan"), "5", True):
        with pytest.raises(ConfigError, match="budget_usd_per_day"):
            config_from_mapping({"budget_usd_per_day": bad})
