"""What the canary's own requests cost (pure): attempts + the endpoints' listed pricing -> RoundCost.

Every probe is a paid request. An attempt's cost is, in this order:

* ``reported``: the upstream's ``usage.cost`` (OpenRouter credits, USD), when the reply carried one;
* ``estimated``: else its tokens x the endpoint's listed pricing in that round (``prompt_price_usd`` per
  prompt token, ``completion_price_usd`` per completion token, plus ``request_price_usd`` per request),
  when the attempt reported tokens and discovery listed both token prices;
* ``unpriced``: else $0 (no usage at all, e.g. a connection refused or a stream cut before its usage chunk).

The DuckDB views ``v_attempt_costs`` ... ``v_daily_costs`` (tasks/store/views.py) compute the same figures
in SQL; a test checks the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from tasks.core.contracts import spec_of
from tasks.core.types import Attempt, Endpoint


class CostBasis(StrEnum):
    REPORTED = "reported"
    ESTIMATED = "estimated"
    UNPRICED = "unpriced"


@dataclass(frozen=True, slots=True)
class AttemptCost:
    basis: CostBasis
    usd: float
    prompt_tokens: int
    completion_tokens: int
    tokens: int


def attempt_cost(a: Attempt, endpoint: Endpoint | None) -> AttemptCost:
    """One attempt's cost and tokens (missing token counts are 0; ``tokens`` prefers the reported total)."""
    u = a.usage
    prompt, completion = u.prompt_tokens or 0, u.completion_tokens or 0
    tokens = u.total_tokens if u.total_tokens is not None else prompt + completion
    if u.cost is not None:
        return AttemptCost(CostBasis.REPORTED, u.cost, prompt, completion, tokens)
    has_tokens = u.prompt_tokens is not None or u.completion_tokens is not None
    if (
        has_tokens
        and endpoint is not None
        and endpoint.prompt_price_usd is not None
        and endpoint.completion_price_usd is not None
    ):
        usd = (
            prompt * endpoint.prompt_price_usd
            + completion * endpoint.completion_price_usd
            + (endpoint.request_price_usd or 0.0)
        )
        return AttemptCost(CostBasis.ESTIMATED, usd, prompt, completion, tokens)
    return AttemptCost(CostBasis.UNPRICED, 0.0, prompt, completion, tokens)


@dataclass(frozen=True, slots=True)
class CostTotals:
    """Sums over some attempts (a round, an endpoint, a day): the columns of the cost views."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    reported_usd: float = 0.0
    estimated_usd: float = 0.0
    estimated_requests: int = 0
    unpriced_requests: int = 0

    @property
    def usd(self) -> float:
        return self.reported_usd + self.estimated_usd

    @property
    def estimated_share(self) -> float:
        """Share of the spend that is estimated from listed pricing (0 when nothing was spent)."""
        return self.estimated_usd / self.usd if self.usd > 0 else 0.0

    def plus(self, c: AttemptCost) -> CostTotals:
        return CostTotals(
            requests=self.requests + 1,
            prompt_tokens=self.prompt_tokens + c.prompt_tokens,
            completion_tokens=self.completion_tokens + c.completion_tokens,
            tokens=self.tokens + c.tokens,
            reported_usd=self.reported_usd + (c.usd if c.basis is CostBasis.REPORTED else 0.0),
            estimated_usd=self.estimated_usd + (c.usd if c.basis is CostBasis.ESTIMATED else 0.0),
            estimated_requests=self.estimated_requests + (c.basis is CostBasis.ESTIMATED),
            unpriced_requests=self.unpriced_requests + (c.basis is CostBasis.UNPRICED),
        )


@dataclass(frozen=True, slots=True)
class RoundCost:
    """What one round's attempts cost, in total and per endpoint (tag)."""

    round_id: str
    model: str
    total: CostTotals = CostTotals()
    by_tag: Mapping[str, CostTotals] = field(default_factory=dict)
    #: The language confirmations' share (attempts 2 and 3 of the language contract), USD.
    confirmations_usd: float = 0.0


def round_cost(
    round_id: str, model: str, attempts: Iterable[Attempt], endpoints: Iterable[Endpoint]
) -> RoundCost:
    """Sum a round's attempts, pricing each with its endpoint as discovered in that round."""
    pricing = {e.tag: e for e in endpoints}
    total = CostTotals()
    by_tag: dict[str, CostTotals] = {}
    confirmations = 0.0
    for a in attempts:
        c = attempt_cost(a, pricing.get(a.tag))
        total = total.plus(c)
        by_tag[a.tag] = by_tag.get(a.tag, CostTotals()).plus(c)
        if is_confirmation(a):
            confirmations += c.usd
    return RoundCost(round_id, model, total, dict(sorted(by_tag.items())), confirmations)


def is_confirmation(a: Attempt) -> bool:
    """A confirmation retry: one of the extra attempts its contract's SPEC sends after a first failure (the
    language contract's attempts 2 and 3). A contract no longer registered has none."""
    try:
        spec = spec_of(a.contract)
    except KeyError:
        return False
    return a.attempt_no in spec.confirm_attempts


def format_usd(usd: float) -> str:
    """Dollars with enough digits to see a probe's cost: $12.35, $0.4210, $0.000123."""
    if usd == 0:
        return "$0"
    if usd >= 10:
        return f"${usd:,.2f}"
    if usd >= 0.01:
        return f"${usd:.4f}"
    return f"${usd:.6f}"


def describe_totals(t: CostTotals) -> str:
    """``$0.0123 (75 requests, 31,204 tokens; 12% estimated)``: the line status and the artifact show."""
    parts = f"{t.requests} request{'s' if t.requests != 1 else ''}, {t.tokens:,} tokens"
    share = t.estimated_share
    shown = "<1%" if 0 < share < 0.005 else f"{share:.0%}"
    estimated = f"; {shown} estimated" if t.estimated_requests else ""
    unpriced = f"; {t.unpriced_requests} without usage" if t.unpriced_requests else ""
    return f"{format_usd(t.usd)} ({parts}{estimated}{unpriced})"
