"""Confirmation rounds (pure): which endpoints and contracts a round's hard failures ask to probe again soon.

A hard fault (broken structured output, wrong language, corrupted openings, a hidden filter, broken tool
calls) costs every user of the endpoint until it is suspended, and the policy suspends after `fail_rounds`
consecutive failing rounds. Instead of waiting a full interval for the second round, the flow asks for a
**confirmation round** `confirm_after_min` minutes later that probes only the failing endpoints, only for
what failed. It is a normal round (own round id, `partial`): the endpoints it does not probe are absent and
their streaks freeze, so "two consecutive failing rounds" keeps its meaning while the second comes sooner.

    request = select_confirmation(settlement, cfg)     # None, or what to probe and when
    probes = narrow_probes(plan_probes(...), request.contracts)   # in the confirmation round

Selection, per endpoint of the round:
* it failed a contract of `cfg.hard_contracts` (default: every contract whose SPEC says `hard_by_default`;
  one whose SPEC says `may_be_hard=False`, `ttft`, is never hard; transport is never a failure);
* it is in traffic and the evidence is not complete yet: not suspended (real or shadow), not floor-blocked
  (its streak already suffices; the floor holds it back), not excluded by another layer of the ignore list;
* the round was decided (a rerun of a decided round asks for nothing), and `confirm_after_min` > 0.
What is probed: the failed contracts, except an unprobed one (`opening`), which is judged over the free-text
replies of the other contracts (their SPECs say `free_text`: ttft, refusal, language) and so probes those.
When refusal is probed, the positive controls (`refusal_controls`) of the round are probed for refusal too, so
a weak probe is still recognised (tasks/core/judge.py rule 2).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from tasks.core.contracts import default_hard, names, never_hard, probed, spec_of, text_contracts
from tasks.core.exclusions import matches
from tasks.core.types import Contract, ContractResult, EndpointState, IgnoreList, Outcome

if TYPE_CHECKING:
    from tasks.config import CanaryConfig
    from tasks.core.plan import Probe
    from tasks.core.settle import Settlement

__all__ = [
    "ConfirmationRequest",
    "contracts_to_probe",
    "hard_failures",
    "narrow_probes",
    "needs_confirmation",
    "parse_contracts",
    "select_confirmation",
    "with_refusal_controls",
]


@dataclass(frozen=True, slots=True)
class ConfirmationRequest:
    """A confirmation round of `model` at `due`: `contracts` per tag to probe, confirming round `confirms`."""

    model: str
    confirms: str
    due: datetime
    contracts: Mapping[str, tuple[str, ...]]

    @property
    def only(self) -> list[str]:
        return sorted(self.contracts)

    def parameters(self) -> dict[str, Any]:
        """The `canary-round` flow parameters that say it is this confirmation (shown in the Prefect UI)."""
        return {
            "model": self.model,
            "only": self.only,
            "contracts": {tag: [str(c) for c in self.contracts[tag]] for tag in self.only},
            "confirms": self.confirms,
        }


def hard_failures(results: Iterable[ContractResult], hard: Iterable[str] | None) -> dict[str, tuple[str, ...]]:
    """Per tag, the hard contracts it failed this round (in registry order); tags without one are left out.
    `hard` None: the registry's defaults."""
    hard_set = {str(h) for h in (default_hard() if hard is None else hard)} - never_hard()
    order = names()
    failed: dict[str, set[str]] = {}
    for r in results:
        if r.outcome is Outcome.FAIL and str(r.contract) in hard_set and r.contract in order:
            failed.setdefault(r.tag, set()).add(r.contract)
    return {tag: tuple(sorted(cs, key=order.index)) for tag, cs in sorted(failed.items())}


def contracts_to_probe(failed: Iterable[str]) -> tuple[str, ...]:
    """The probed contracts that judge `failed` again: an unprobed contract (`opening`) is judged over the
    free-text contracts' replies, so those are probed."""
    wanted: set[str] = set()
    for contract in failed:
        wanted |= {contract} if spec_of(contract).is_probed else set(text_contracts())
    return tuple(c for c in probed() if c in wanted)


def needs_confirmation(state: EndpointState | None, tag: str, ignore: IgnoreList) -> bool:
    """In traffic and still short of a decision: not suspended, not floor-blocked, not on the ignore list."""
    if state is None or state.is_suspended or state.floor_blocked or state.fail_streak < 1:
        return False
    return not any(matches(item, tag) for item in ignore.ignore)


def select_confirmation(settled: Settlement, cfg: CanaryConfig) -> ConfirmationRequest | None:
    """The confirmation round a settled round asks for, or None (see the module docstring)."""
    if cfg.confirm_after_min <= 0 or not settled.decided:
        return None
    failing = hard_failures(settled.results, cfg.hard_contracts)
    plan: dict[str, tuple[str, ...]] = {
        tag: contracts_to_probe(failed)
        for tag, failed in failing.items()
        if needs_confirmation(settled.states.get(tag), tag, settled.ignore)
    }
    if not plan:
        return None
    info = settled.info
    plan = with_refusal_controls(plan, cfg.refusal_controls, {e.tag for e in settled.endpoints})
    return ConfirmationRequest(model=info.model, confirms=info.round_id,
                               due=info.round_ts + timedelta(minutes=cfg.confirm_after_min),
                               contracts=dict(sorted(plan.items())))


def with_refusal_controls(plan: Mapping[str, tuple[str, ...]], controls: Iterable[str], present: Collection[str]
                          ) -> dict[str, tuple[str, ...]]:
    """`plan` plus, when it probes refusal anywhere, refusal on each positive control among `present` (the
    endpoints the model has), so a weak probe is still recognised (tasks/core/judge.py rule 2)."""
    out = dict(plan)
    if not any(Contract.REFUSAL in cs for cs in out.values()):
        return out
    for control in controls:
        if control in present and Contract.REFUSAL not in out.get(control, ()):
            out[control] = contracts_to_probe((*out.get(control, ()), Contract.REFUSAL))
    return out


def parse_contracts(only: Sequence[str] | None, contracts: Mapping[str, Sequence[str]] | None
                    ) -> dict[str, tuple[str, ...]] | None:
    """Flow parameters -> contracts per tag (None: a full round). A tag of `only` without an entry in
    `contracts` is probed for every contract; an unknown contract name raises ValueError."""
    if only is None and not contracts:
        return None
    out: dict[str, tuple[str, ...]] = {}
    given = dict(contracts or {})
    known = names()
    for tag in [*(only or ()), *given]:
        listed = given.get(tag)
        if listed is not None and (unknown := [str(n) for n in listed if str(n) not in known]):
            raise ValueError(f"{unknown[0]!r} is not a valid Contract")
        out[tag] = probed() if listed is None else tuple(c for c in probed() if c in {str(n) for n in listed})
    return out


def narrow_probes(probes: Sequence[Probe], contracts: Mapping[str, Sequence[str]] | None) -> list[Probe]:
    """The probes of a confirmation round: those of the listed tags and contracts (None: all of them)."""
    if contracts is None:
        return list(probes)
    return [p for p in probes if p.contract in contracts.get(p.endpoint.tag, ())]
