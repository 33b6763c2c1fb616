"""Settle one round (pure): attempts + what the round needs from the past -> everything the round produces.

    settle_round(prior, attempts, endpoints, cfg, now) -> Settlement
        = judge_round (contracts, controls, pins, openings)     tasks/core/judge.py
        + round status per endpoint (pandas)                     tasks/core/verdicts.py
        + settle_policy (mode, exclusions in force, the policy)  tasks/core/policy.py
        + the merged ignore list                                  tasks/core/exclusions.py
        + the alerts the round causes                             tasks/core/render/

The shell reads a `Prior` in one short window, probes, calls this, and writes the `Settlement` in one
transaction. When the prior changed between the read and the write (an admin lift, a deferred round landed
first), the shell settles again with the fresh prior inside the write window: `settle_judged` reuses the
judgement, so only the cheap policy part runs twice. `canary replay` folds `settle_policy` over recorded
statuses, the same function the live round uses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from tasks.config import CanaryConfig, public_base_url
from tasks.core.exclusions import describe_suspension, excluded_layers, merge_ignore_list
from tasks.core.judge import RoundFindings, RoundJudgement, findings_from_results, judge_round
from tasks.core.plan import make_round_id
from tasks.core.policy import PolicyConfig, RoundInput, carry_over, decide
from tasks.core.render import alerts_for_round, describe_changes, silence_alerts
from tasks.core.render.links import AlertLinks, with_links
from tasks.core.render.round_alerts import render_empty_catalog_alert
from tasks.core.types import (
    Action,
    Alert,
    Attempt,
    BuiltinExclusion,
    ContractResult,
    Decision,
    Endpoint,
    EndpointState,
    IgnoreList,
    Layer,
    Mode,
    OperationalExclusion,
    Outcome,
    RoundInfo,
    RoundStatus,
)
from tasks.core.verdicts import results_frame, round_status, status_map


def resolve_mode(override: str | Mode | None, setting: str | None, configured: Mode) -> Mode:
    """The one rule for the mode: a `--mode` flag, else the admin's `canary mode`, else the config.

    The flag (or a deployment run's `mode` parameter) holds for that run only: it is never the stored mode,
    so the next run without it carries on from the stored mode's states (`Prior.stored_mode`)."""
    return Mode(str(override or setting or configured))


def run_modes(override: str | Mode | None, setting: str | None, configured: Mode) -> tuple[Mode, Mode | None]:
    """(the run's mode, the stored mode when a per-run `--mode` differs from it, else None)."""
    stored = resolve_mode(None, setting, configured)
    run = resolve_mode(override, setting, configured)
    return run, (stored if stored is not run else None)


@dataclass(frozen=True, slots=True)
class Prior:
    """Everything one round of `model` needs from the past (read by the shell in one short window)."""

    model: str
    mode: Mode  # the run's mode: its decisions (suspend or would_suspend) and what its ignore list holds
    states: Mapping[str, EndpointState] = field(default_factory=dict)  # the stored mode's, seeded from the other
    previous_results: tuple[ContractResult, ...] = ()  # the last complete full round's outcomes
    previous_languages: Mapping[str, tuple[str, Outcome]] = field(default_factory=dict)
    builtin: tuple[BuiltinExclusion, ...] = ()
    operational: tuple[OperationalExclusion, ...] = ()  # active or not: settle filters by time
    decided_until: datetime | None = None  # the newest round_ts the policy has already applied
    last_complete_ts: datetime | None = None  # the latest complete round before this one
    interval: timedelta = timedelta(minutes=30)
    available: bool = True  # False: the store could not be read; the save step settles again
    last_full_tags: tuple[str, ...] = ()  # endpoints of the last complete full round (a partial round's discovery)
    #: Set when this run's mode is a per-run override (`canary run --mode`, a deployment run's `mode`) that
    #: differs from the stored mode (`canary mode`, else the config): the run decides in `mode` over the
    #: stored states as they are (no mode-switch carry-over, no `mode-switch` lifts), and saves its states
    #: back in the stored mode, so the next ordinary run carries on with no switch either.
    stored_mode: Mode | None = None
    #: tag -> why its current suspension happened (read from the store's decisions and outcomes), for the
    #: ignore list's reasons; the suspensions this round makes are described from its own results.
    suspension_evidence: Mapping[str, str] = field(default_factory=dict)
    #: tag -> the key of the Slack message that announced its current suspension: the round's events of that
    #: endpoint go in that message's thread (tasks/core/render/decision_groups.py).
    threads: Mapping[str, str] = field(default_factory=dict)

    @property
    def state_mode(self) -> Mode:
        """The mode the round's states are saved in."""
        return self.stored_mode or self.mode

    def fingerprint(self) -> str:
        """Changes whenever anything the policy part of settling reads changes."""
        parts = (
            self.model, str(self.mode), sorted(self.states.items()),
            [r.round_id for r in self.previous_results[:1]],
            self.builtin, self.operational, self.decided_until, self.last_complete_ts, self.available,
            self.last_full_tags, self.stored_mode,
        )
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]

    def already_decided(self, round_ts: datetime) -> bool:
        return self.decided_until is not None and self.decided_until >= round_ts


@dataclass(frozen=True, slots=True)
class Settlement:
    """Everything one round produces; the save step writes all of it in one transaction."""

    info: RoundInfo
    endpoints: tuple[Endpoint, ...]
    attempts: tuple[Attempt, ...]
    judgement: RoundJudgement
    statuses: Mapping[str, RoundStatus]
    decided: bool  # False: this round id was already decided; states and decisions were left alone
    states: Mapping[str, EndpointState]
    decisions: tuple[Decision, ...]
    ignore: IgnoreList
    alerts: tuple[Alert, ...]
    changes: tuple[str, ...]  # what changed since the previous complete round (the artifact)
    prior_fingerprint: str
    extra_alerts: tuple[Alert, ...] = ()  # alerts about the round itself, not its decisions (e.g. the budget)
    state_mode: Mode | None = None  # the mode `states` are saved in (None: info.mode; see Prior.stored_mode)
    threads: Mapping[str, str] = field(default_factory=dict)  # decision_id -> its suspension's message key
    links: AlertLinks = AlertLinks()  # what the round's alerts link to (kept for settling again at the save)

    @property
    def results(self) -> list[ContractResult]:
        return self.judgement.results

    @property
    def findings(self) -> RoundFindings:
        return self.judgement.findings


def settle_policy(
    prior: Prior,
    round_id: str,
    round_ts: datetime,
    statuses: Mapping[str, RoundStatus],
    discovered: Sequence[str],
    cfg: PolicyConfig,
    *,
    excluded: Mapping[str, Layer] | None = None,
) -> tuple[dict[str, EndpointState], list[Decision]]:
    """One round of the policy for `prior.model` in `prior.mode` (the states carry over between modes).

    `excluded` (the builtin/operational layer per tag) defaults to what `prior`'s exclusions say at
    `round_ts`; replay passes the layers its input lines recorded.
    """
    if prior.already_decided(round_ts):
        return dict(prior.states), []
    tags = tuple(sorted(set(discovered) | set(statuses)))
    if excluded is None:
        excluded = excluded_layers(prior.model, tags, prior.builtin, prior.operational, round_ts)
    rnd = RoundInput(round_id=round_id, round_ts=round_ts, model=prior.model, statuses=statuses,
                     discovered=tags, excluded=excluded)
    if prior.stored_mode is None:
        return decide(prior.states, rnd, replace(cfg, mode=prior.mode))
    # a per-run mode: a real switch into the stored mode if one is due, then the stored states seen as-is
    states, switched = carry_over(prior.states, prior.stored_mode, round_ts)
    states, decisions = decide(relabel(states, prior.mode), rnd, replace(cfg, mode=prior.mode))
    return states, switched + decisions


def relabel(states: Mapping[str, EndpointState], mode: Mode) -> dict[str, EndpointState]:
    """The same states under `mode`, suspensions and all (not a mode switch: see `Prior.stored_mode`)."""
    return {t: st if st.mode is mode else replace(st, mode=mode) for t, st in states.items()}


def round_statuses(results: Sequence[ContractResult]) -> dict[str, RoundStatus]:
    """Round status per tag (pandas; docs/design.md "round status")."""
    return status_map(round_status(results_frame(results)))


def settle_round(
    prior: Prior,
    attempts: Sequence[Attempt],
    endpoints: Sequence[Endpoint],
    cfg: CanaryConfig,
    now: datetime,
    *,
    round_id: str | None = None,
    partial: bool = False,
    extra_alerts: Sequence[Alert] = (),
    run_id: str | None = None,
    links: AlertLinks = AlertLinks(),
) -> Settlement:
    """Judge the round's attempts, then settle it against `prior` at `now` (the round's time).

    `partial`: a confirmation round (tasks/core/confirm.py): `endpoints` are the probed ones only; the
    others are absent (frozen) and the floor counts them as discovered (`discovered_tags`).
    `extra_alerts`: alerts about the round itself, not its decisions (the budget footprint's), sent with them.
    `run_id`: the run that chose the round's time (`RoundInfo.run_id`: the save refuses another run's round).
    `links`: what every alert of the round links to (its flow run, the dashboard, the runbook)."""
    judgement = judge_round(attempts, endpoints, cfg)
    return settle_judged(prior, judgement, attempts, endpoints, cfg, now,
                         round_id=round_id or make_round_id(prior.model, now), partial=partial,
                         extra_alerts=extra_alerts, run_id=run_id, links=links)


def new_suspension_evidence(decisions: Sequence[Decision], results: Sequence[ContractResult]) -> dict[str, str]:
    """Tag -> why this round suspended it: its failing contracts this round and the decision's evidence rounds."""
    return {
        d.tag: describe_suspension(
            [(str(r.contract), r.reason) for r in results if r.tag == d.tag and r.outcome is Outcome.FAIL],
            d.evidence_round_ids,
        )
        for d in decisions if d.action is Action.SUSPEND
    }


def discovered_tags(prior: Prior, probed: Sequence[str], partial: bool) -> list[str]:
    """The tags the policy's floor and the ignore list see as discovered this round: a full round's own
    discovery; for a partial round the last complete full round's endpoints plus the probed ones (the same
    rule `canary replay` applies to partial rounds, so a replay of the history decides the same)."""
    return sorted(set(probed) | (set(prior.last_full_tags) if partial else set()))


def settle_judged(
    prior: Prior,
    judgement: RoundJudgement,
    attempts: Sequence[Attempt],
    endpoints: Sequence[Endpoint],
    cfg: CanaryConfig,
    now: datetime,
    *,
    round_id: str,
    partial: bool = False,
    extra_alerts: Sequence[Alert] = (),
    run_id: str | None = None,
    links: AlertLinks = AlertLinks(),
) -> Settlement:
    """`settle_round` after judging: statuses, policy, ignore list, alerts (cheap; runs again on a new prior)."""
    model = prior.model
    statuses = round_statuses(judgement.results)
    probed = sorted({e.tag for e in endpoints if e.model == model})
    tags = discovered_tags(prior, probed, partial)
    previous = tuple(r for r in prior.previous_results if not partial or r.tag in probed)
    decided = not prior.already_decided(now)
    states, decisions = settle_policy(prior, round_id, now, statuses, tags, PolicyConfig.from_config(cfg))
    ignore = merge_ignore_list(model, tags, prior.builtin, prior.operational, states, now,
                               evidence={**prior.suspension_evidence,
                                         **new_suspension_evidence(decisions, judgement.results)})
    before = findings_from_results(previous, cfg)
    findings = judgement.findings
    messages = alerts_for_round(
        model, round_id, now, decisions,
        findings.probe_weak and not before.probe_weak,
        [t for t in findings.pin_mismatches if t not in before.pin_mismatches],
        ignore,
        results=judgement.results,
        attempts=attempts,
        passed_controls=findings.weak_controls,
        threads=prior.threads,
    )
    alerts = list(messages.alerts)
    if not tags and prior.previous_results:  # the catalog emptied since the last round (once per episode)
        alerts.append(render_empty_catalog_alert(model, round_id, now, public_base_url(cfg), ignore))
    if prior.last_complete_ts is not None:  # the round that ends a silence says so (once per episode)
        alerts += silence_alerts({model: prior.last_complete_ts}, now, prior.interval,
                                 ignore_lists={model: ignore})
    return Settlement(
        info=RoundInfo(round_id=round_id, model=model, round_ts=now, mode=prior.mode, partial=partial, run_id=run_id),
        endpoints=tuple(endpoints),
        attempts=tuple(attempts),
        judgement=judgement,
        statuses=statuses,
        decided=decided,
        states=relabel(states, prior.state_mode),
        decisions=tuple(decisions),
        ignore=ignore,
        alerts=tuple(with_links(a, links) for a in alerts),
        changes=tuple(describe_changes(previous, judgement.results)),
        prior_fingerprint=prior.fingerprint(),
        extra_alerts=tuple(with_links(a, links) for a in extra_alerts),
        state_mode=prior.state_mode,
        threads=messages.threads,
        links=links,
    )
