"""One round's attempts -> one ContractResult per (endpoint, contract), plus the round's findings (pure).

Every registered contract (tasks/core/contracts/__init__.py) is judged by its SPEC's judge, in registry order.
Rules applied on top of the contract judges:
1. **Pin mismatch**: if any attempt of (tag, contract) was served by another provider than the endpoint's
   `provider_name`, that contract is `inconclusive` `pin_mismatch` (the probe proves nothing about this
   endpoint) and the tag is listed in `RoundFindings.pin_mismatches` for an admin alert.
2. **Positive controls** (`cfg.refusal_controls`, tags known to filter). Decided here: a control's own
   refusal row is always `inconclusive`: `control_caught` when the probe caught it (the judge said fail),
   `control_missed` when it passed, `control_<reason>` otherwise (transport, pin, a protocol violation:
   `control_protocol_violation`, or an upstream failure: `control_upstream_error`, which say nothing about
   its filter). The evidence keeps
   the underlying judgement, so the row is reported, but it never counts towards the control's own round
   status (a host that filters by design is not suspended for filtering). If any control *passed*, the
   refusal probe is weak this round: every other endpoint's refusal `pass`/`fail` becomes `inconclusive`
   `probe_weak` and `RoundFindings.probe_weak` is set. A control that was unreachable proves nothing either
   way and does not weaken the probe. Controls' other contracts count normally.
3. **Round-level judges** (a SPEC's `round_judge`, tasks/core/contracts/spec.py) then see the model's endpoints
   together: the tools contract compares each endpoint with its peers; the opening contract, never probed, gets a
   row for every endpoint with attempts, judged over its free-text replies and compared with the model's other
   endpoints (tasks/core/contracts/opening.py).
Contracts an endpoint was not probed for get no row (absent, which the policy treats like frozen).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tasks.config import CanaryConfig
from tasks.core.contracts import ContractSpec, Judge, PeerRound, spec_of, specs
from tasks.core.types import (
    Attempt,
    Contract,
    ContractResult,
    Endpoint,
    Judgement,
    Outcome,
    Reason,
    control_reason,
)


@dataclass(frozen=True, slots=True)
class RoundFindings:
    """What admins must hear about the round itself (not about one endpoint's quality)."""

    probe_weak: bool = False
    weak_controls: tuple[str, ...] = ()  # controls whose refusal probe passed
    pin_mismatches: tuple[str, ...] = ()  # tags with at least one attempt served by another provider
    pin_evidence: Mapping[str, str] = field(default_factory=dict)


class RoundJudgement(list[ContractResult]):
    """The round's ContractResults (a list, as `judge_round` promises) carrying its `findings`."""

    findings: RoundFindings

    def __init__(self, results: Sequence[ContractResult], findings: RoundFindings) -> None:
        super().__init__(results)
        self.findings = findings

    @property
    def results(self) -> list[ContractResult]:
        return list(self)

    @property
    def probe_weak(self) -> bool:
        return self.findings.probe_weak

    @property
    def pin_mismatches(self) -> list[str]:
        return list(self.findings.pin_mismatches)


def _pin_judgement(attempts: Sequence[Attempt]) -> Judgement | None:
    bad = [a for a in attempts if a.is_pin_mismatch]
    if not bad:
        return None
    a = bad[0]
    return Judgement(
        Outcome.INCONCLUSIVE,
        Reason.PIN_MISMATCH,
        f"served_provider ({a.served_provider}) != {a.provider_name}",
    )


def _control_judgement(j: Judgement) -> Judgement:
    reason: str
    if j.outcome is Outcome.FAIL and j.reason not in (Reason.PROTOCOL_VIOLATION, Reason.UPSTREAM_ERROR):
        reason = Reason.CONTROL_CAUGHT
    elif j.outcome is Outcome.PASS:
        reason = Reason.CONTROL_MISSED
    else:  # transport, inconclusive, or a broken protocol: the control proved nothing either way
        reason = control_reason(j.reason)
    return Judgement(Outcome.INCONCLUSIVE, reason, f"positive control: {j.outcome} {j.reason}: {j.evidence}")


def _result(attempts: Sequence[Attempt], spec: ContractSpec, j: Judgement) -> ContractResult:
    ordered = sorted(attempts, key=lambda a: (a.contract, a.attempt_no))
    first = ordered[0]
    language = first.language if spec.rotated_language else None
    return ContractResult(
        round_id=first.round_id,
        model=first.model,
        tag=first.tag,
        contract=spec.name,
        outcome=j.outcome,
        reason=j.reason,
        evidence=j.evidence,
        attempt_ids=tuple(a.attempt_id for a in ordered),
        language=language,
    )


_Groups = dict[tuple[str, str], dict[str, list[Attempt]]]
_Judgements = dict[tuple[str, str], dict[str, Judgement]]


def judge_round(
    attempts: Sequence[Attempt],
    endpoints: Sequence[Endpoint],
    cfg: CanaryConfig,
    *,
    judges: Mapping[str, Judge] | None = None,
) -> RoundJudgement:
    """Judge every (model, tag, contract) group of the round; see the module docstring for the rules.

    `judges` replaces some contracts' per-endpoint judges (a what-if over recorded rounds, e.g. the structured
    judge with another schema)."""
    registry = specs()
    probed = [s for s in registry if s.is_probed]
    groups, keys = _group(attempts, endpoints)
    controls = set(cfg.refusal_controls)
    judgements: _Judgements = {}
    weak: list[str] = []
    pins: dict[str, str] = {}
    for key in keys:
        judgements[key] = _judge_endpoint(groups[key], key[1], probed, cfg, judges or {}, controls, weak, pins)
    if weak:
        _weaken_refusals(judgements, weak, controls)
    by_model = _attempts_by_model(groups, keys)
    unprobed = _judge_round_level(registry, probed, by_model, judgements, cfg)
    findings = RoundFindings(
        probe_weak=bool(weak),
        weak_controls=tuple(weak),
        pin_mismatches=tuple(sorted(pins)),
        pin_evidence=dict(sorted(pins.items())),
    )
    return RoundJudgement(_results(keys, groups, judgements, unprobed, by_model), findings)


def _group(attempts: Sequence[Attempt], endpoints: Sequence[Endpoint]) -> tuple[_Groups, list[tuple[str, str]]]:
    """The attempts by (model, tag) and contract, and the (model, tag) keys in the endpoints' order."""
    groups: _Groups = defaultdict(lambda: defaultdict(list))
    for a in attempts:
        groups[(a.model, a.tag)][a.contract].append(a)
    order = {(e.model, e.tag): i for i, e in enumerate(endpoints)}
    return groups, sorted(groups, key=lambda k: (k[0], order.get(k, len(order)), k[1]))


def _judge_endpoint(
    by_contract: Mapping[str, list[Attempt]],
    tag: str,
    probed: Sequence[ContractSpec],
    cfg: CanaryConfig,
    judges: Mapping[str, Judge],
    controls: set[str],
    weak: list[str],
    pins: dict[str, str],
) -> dict[str, Judgement]:
    """One endpoint's probed contracts judged (rules 1 and 2); a pin mismatch goes to `pins`, a control whose
    refusal probe passed to `weak`."""
    per_contract: dict[str, Judgement] = {}
    for spec in probed:
        group = by_contract.get(spec.name)
        if not group:
            continue
        pin = _pin_judgement(group)
        if pin is not None:
            pins.setdefault(tag, pin.evidence)
            per_contract[spec.name] = pin
            continue
        j = judges.get(spec.name, spec.judge)(group, cfg)
        if spec.name == Contract.REFUSAL and tag in controls:
            if j.outcome is Outcome.PASS:
                weak.append(tag)
            j = _control_judgement(j)
        per_contract[spec.name] = j
    return per_contract


def _weaken_refusals(judgements: _Judgements, weak: Sequence[str], controls: set[str]) -> None:
    """A control passed: every other endpoint's refusal pass/fail becomes `probe_weak` (rule 2)."""
    for key, per_contract in judgements.items():
        old = per_contract.get(Contract.REFUSAL)
        if old is not None and key[1] not in controls and old.outcome.is_quality():
            per_contract[Contract.REFUSAL] = Judgement(
                Outcome.INCONCLUSIVE,
                Reason.PROBE_WEAK,
                f"controls passed ({', '.join(weak)}); was {old.outcome} {old.reason}",
            )


def _attempts_by_model(groups: _Groups, keys: Sequence[tuple[str, str]]) -> dict[str, dict[str, list[Attempt]]]:
    by_model: dict[str, dict[str, list[Attempt]]] = defaultdict(dict)
    for model, tag in keys:
        by_model[model][tag] = [a for group in groups[(model, tag)].values() for a in group]
    return by_model


def _judge_round_level(
    registry: Sequence[ContractSpec],
    probed: Sequence[ContractSpec],
    by_model: Mapping[str, Mapping[str, list[Attempt]]],
    judgements: _Judgements,
    cfg: CanaryConfig,
) -> _Judgements:
    """Rule 3: the round-level judges (peer comparisons: tools; unprobed contracts: opening). A probed contract's
    row lands in `judgements`; the unprobed contracts' rows are returned."""
    text = frozenset(s.name for s in probed if s.free_text)
    unprobed: _Judgements = defaultdict(dict)
    for spec in registry:
        if spec.round_judge is None:
            continue
        for model, per_tag in by_model.items():
            own = {t: j for (m, t), js in judgements.items() if m == model
                   for c, j in js.items() if c == spec.name and j.reason != Reason.PIN_MISMATCH}
            for tag, j in spec.round_judge(PeerRound(per_tag, own, text), cfg).items():
                (judgements if spec.is_probed else unprobed)[(model, tag)][spec.name] = j
    return unprobed


def _results(
    keys: Sequence[tuple[str, str]],
    groups: _Groups,
    judgements: _Judgements,
    unprobed: _Judgements,
    by_model: Mapping[str, Mapping[str, list[Attempt]]],
) -> list[ContractResult]:
    results: list[ContractResult] = []
    for key in keys:
        for contract, j in judgements[key].items():
            results.append(_result(groups[key][contract], spec_of(contract), j))
        for contract, j in unprobed[key].items():
            results.append(_result(by_model[key[0]][key[1]], spec_of(contract), j))
    return results


def findings_from_results(results: Sequence[ContractResult], cfg: CanaryConfig) -> RoundFindings:
    """Recompute the findings from stored results (the artifact), e.g. for alerts after a reload.

    Reasons are compared as `Reason` members (a stored string that is no member matches nothing).
    """
    controls = set(cfg.refusal_controls)
    reasons = [(r, _reason(r.reason)) for r in results]
    weak = sorted({r.tag for r, why in reasons if r.tag in controls and why is Reason.CONTROL_MISSED})
    pins = {r.tag: r.evidence for r, why in reasons if why is Reason.PIN_MISMATCH}
    return RoundFindings(
        probe_weak=bool(weak),
        weak_controls=tuple(weak),
        pin_mismatches=tuple(sorted(pins)),
        pin_evidence=pins,
    )


def _reason(value: str) -> Reason | None:
    try:
        return Reason(value)
    except ValueError:
        return None
