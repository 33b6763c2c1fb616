"""The daily budget (pure): when the projected spend exceeds `budget_usd_per_day`, the canary probes less.

The projection (`Projection`, read by tasks/store/costs.py) is the larger of the spend of the last 24 hours
and, summed over the models, each model's last full round x rounds per day (1440 / interval_min) plus the last
24 hours' confirmation rounds: a new model or a price rise counts at once, and a reduction is released only
when both fit. Over budget, the footprint is lowered in this order, each step only when the previous one is not
enough:

1. **No language confirmations** (always the first step): a first language failure is not retried twice
   on endpoints that are neither suspended nor failing (fail streak 0). A lone failing attempt then raises
   the fail streak to 1 at most; from then on the endpoint is failing and confirmed in full, so a
   suspension always rests on at least one confirmed failing round.
2. **Healthy endpoints every other round** (only when the projection minus the confirmations' share still
   exceeds the budget): an endpoint with `HEALTHY_CLEAN_ROUNDS` clean rounds in a row, not suspended, fail
   streak 0, clean in the last round, and not a refusal control (`keep`), is skipped this round. Skipped, it
   is absent from the round (streaks frozen, as for any absent endpoint), so it is probed the next round.

An endpoint that is suspended or failing (fail streak > 0, or `fail` in the last round) is never skipped and
keeps its confirmations. The first reduction of a UTC day raises one alert (kind ``budget``, key
``budget|<day>``: the outbox sends a key once, ever). No budget (0) never reduces anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tasks.core.cost import format_usd
from tasks.core.render.slack import build_alert
from tasks.core.types import Alert, ContractResult, EndpointState, Outcome, RoundStatus

#: Clean rounds in a row after which an endpoint counts as healthy enough to be probed every other round.
HEALTHY_CLEAN_ROUNDS = 4


@dataclass(frozen=True, slots=True)
class Projection:
    """What the canary is projected to spend per day, USD (tasks/store/costs.py reads it)."""

    usd_per_day: float = 0.0
    last_day_usd: float = 0.0  # spent by rounds in the 24 hours before now
    last_rounds_usd_per_day: float = 0.0  # sum over models of the last full round x rounds per day (+ partial)
    confirmations_usd_per_day: float = 0.0  # the language confirmations' part of the latter


def project(last_day_usd: float, last_round_usd: Mapping[str, float], last_round_confirmations_usd:
            Mapping[str, float], interval_min: int, *, partial_rounds_usd: float = 0.0) -> Projection:
    """The larger of the last day's spend and the last full rounds' spend x rounds per day plus what the
    confirmation rounds of the last day spent (`partial_rounds_usd`)."""
    rounds_per_day = 1440 / interval_min
    per_day = sum(last_round_usd.values()) * rounds_per_day + partial_rounds_usd
    confirmations = sum(last_round_confirmations_usd.values()) * rounds_per_day
    return Projection(max(last_day_usd, per_day), last_day_usd, per_day, confirmations)


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a round leaves out to stay within the budget (the default: nothing)."""

    skip_confirmations: bool = False
    skip_tags: frozenset[str] = frozenset()
    alert: Alert | None = None
    protected: frozenset[str] = frozenset()  # suspended or failing: probed in full, confirmations included
    evidence: str = ""

    def confirms(self, tag: str) -> bool:
        """Whether a first language failure of `tag` gets its two confirmation attempts this round."""
        return not self.skip_confirmations or tag in self.protected

    @property
    def is_reduced(self) -> bool:
        return self.skip_confirmations or bool(self.skip_tags)


FULL = Footprint()


def footprint(
    projected: Projection,
    budget_usd_per_day: float,
    states: Mapping[str, EndpointState],
    last_statuses: Mapping[str, RoundStatus],
    *,
    model: str,
    now: datetime,
    keep: frozenset[str] = frozenset(),
    healthy_rounds: int = HEALTHY_CLEAN_ROUNDS,
) -> Footprint:
    """The footprint of the next round of `model`.

    `states`: the policy state per tag; `last_statuses`: each tag's status in the model's last round (a tag
    absent from it was not probed then); `keep`: tags never skipped (the refusal controls).
    """
    if not budget_usd_per_day > 0 or not projected.usd_per_day > budget_usd_per_day:
        return FULL
    tags = set(states) | set(last_statuses)
    protected = frozenset(t for t in tags if _is_failing(states.get(t), last_statuses.get(t)))
    skip: frozenset[str] = frozenset()
    if projected.usd_per_day - projected.confirmations_usd_per_day > budget_usd_per_day:
        skip = frozenset(
            t for t in tags
            if t not in protected and t not in keep
            and _is_healthy(states.get(t), last_statuses.get(t), healthy_rounds)
        )
    evidence = (
        f"projected {format_usd(projected.usd_per_day)}/day > budget_usd_per_day "
        f"{format_usd(budget_usd_per_day)} (last 24 h {format_usd(projected.last_day_usd)}, last rounds x "
        f"rounds per day {format_usd(projected.last_rounds_usd_per_day)})"
    )
    alert = _budget_alert(model, now, evidence, len(skip))
    return Footprint(True, skip, alert, protected, evidence)


def _is_failing(state: EndpointState | None, last: RoundStatus | None) -> bool:
    return (state is not None and (state.is_suspended or state.fail_streak > 0)) or last is RoundStatus.FAIL


def _is_healthy(state: EndpointState | None, last: RoundStatus | None, healthy_rounds: int) -> bool:
    return (
        state is not None
        and not state.is_suspended
        and state.fail_streak == 0
        and state.clean_streak >= healthy_rounds
        and last is RoundStatus.CLEAN
    )


def _budget_alert(model: str, now: datetime, evidence: str, skipped: int) -> Alert:
    day = f"{now:%Y-%m-%d}"
    steps = ["no language confirmations on endpoints that are neither suspended nor failing"]
    if skipped:
        steps.append(f"healthy endpoints probed every other round ({skipped} skipped in this round)")
    return build_alert(
        key=f"budget|{day}", kind="budget", model=model, tag=None, created_at=now,
        title="Canary over its daily budget",
        sections=[f"{evidence}.", "Lowering its own footprint: " + "; ".join(steps) + ".",
                  "Suspended and failing endpoints are still probed in full."],
        digest_line=f"once per UTC day ({day}); raise `budget_usd_per_day` or set it to 0 to stop reducing",
    )



def last_round_statuses(results: Sequence[ContractResult]) -> dict[str, RoundStatus]:
    """Each tag's round status from its outcomes in the last round (docs/design.md: fail > transport >
    clean > inconclusive); a tag without outcomes there is absent."""
    from tasks.core.verdicts import status_of

    outcomes: dict[str, set[Outcome]] = {}
    for r in results:
        outcomes.setdefault(r.tag, set()).add(r.outcome)
    return {tag: status_of(seen) for tag, seen in outcomes.items()}
