"""Settling a round (tasks/core/settle.py) beyond what the confirmation tests read: the mode rule, a partial
round's discovery, what a suspension's ignore-list entry says, what the settlement carries through to the save
step (attempts, links, threads, the round's identity), and when the prior's fingerprint changes."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from tasks.core.render.links import AlertLinks
from tasks.core.settle import Prior, discovered_tags, relabel, resolve_mode, run_modes, settle_judged
from tasks.core.types import Action, Contract, EndpointState, Mode, Outcome
from tests.unit.test_confirm import CFG, MODEL, T0, endpoints, results

pytestmark = pytest.mark.unit
E, OBS = Mode.ENFORCE, Mode.OBSERVE
LINKS = AlertLinks(flow_run_url="https://prefect.example/runs/1", grafana_url=None, runbook_base_url=None)


def test_the_flag_then_the_admins_setting_then_the_config() -> None:
    assert resolve_mode(None, None, OBS) is OBS and resolve_mode(None, "enforce", OBS) is E
    assert resolve_mode("observe", "enforce", E) is OBS
    assert run_modes(None, None, E) == (E, None) and run_modes(None, "observe", E) == (OBS, None)
    assert run_modes("observe", None, E) == (OBS, E) and run_modes("enforce", None, E) == (E, None)


def test_a_partial_round_discovers_the_last_full_rounds_endpoints_too() -> None:
    prior = Prior(model=MODEL, mode=E, last_full_tags=("alpha", "beta"))
    assert discovered_tags(prior, ["gamma"], True) == ["alpha", "beta", "gamma"]
    assert discovered_tags(prior, ["gamma"], False) == ["gamma"]


def test_relabel_keeps_a_state_already_in_the_mode() -> None:
    kept, other = EndpointState(MODEL, "a", E), EndpointState(MODEL, "b", OBS)
    out = relabel({"a": kept, "b": other}, E)
    assert out["a"] is kept and out["b"] == replace(other, mode=E)


def suspending_round(**kw: object) -> tuple[Prior, object]:
    prior = Prior(model=MODEL, mode=E, states={
        "beta": EndpointState(MODEL, "beta", E, fail_streak=1, fail_rounds=("r1@2026-11-02T09:30Z",))},
        threads={"gamma": "suspend|gamma"}, **kw)  # type: ignore[arg-type]
    outcomes = {t: {} for t in ("alpha", "beta", "gamma", "delta", "control")}
    outcomes["beta"] = {Contract.STRUCTURED: Outcome.FAIL, Contract.LANGUAGE: Outcome.FAIL}
    outcomes["alpha"] = {Contract.TTFT: Outcome.FAIL}
    return prior, results(T0, outcomes)


def test_the_settlement_carries_the_round_through_to_the_save() -> None:
    prior, judgement = suspending_round()
    attempts: list[object] = []
    settled = settle_judged(prior, judgement, attempts, endpoints(), CFG, T0,  # type: ignore[arg-type]
                            round_id="acme/model@r2", run_id="run-7", links=LINKS)
    assert settled.attempts == () and isinstance(settled.attempts, tuple)
    info = settled.info
    assert (info.round_id, info.model, info.round_ts, info.mode, info.partial, info.run_id) == (
        "acme/model@r2", MODEL, T0, E, False, "run-7")
    assert settled.links == LINKS and settled.state_mode is E and settled.decided
    assert [d.action for d in settled.decisions] == [Action.SUSPEND]
    assert settled.alerts and all(LINKS.flow_run_url in a.text for a in settled.alerts)
    entry = next(e for e in settled.ignore.entries if e.tag == "beta")
    assert entry.reason == ("canary suspension (ladder step 1): failed language (x), structured (x) in rounds "
                            "2026-11-02T09:30Z, r2")  # beta's failures only, not alpha's ttft


def test_the_fingerprint_changes_with_what_the_policy_reads() -> None:
    base = Prior(model=MODEL, mode=E)
    changed = [replace(base, model="acme/other"), replace(base, mode=OBS),
               replace(base, states={"a": EndpointState(MODEL, "a", E)}), replace(base, available=False),
               replace(base, decided_until=T0), replace(base, last_complete_ts=T0), replace(base, stored_mode=OBS),
               replace(base, last_full_tags=("a",)), replace(base, interval=timedelta(minutes=30))]
    prints = [p.fingerprint() for p in changed]
    assert len(base.fingerprint()) == 16 and base.fingerprint() == Prior(model=MODEL, mode=E).fingerprint()
    assert prints[-1] == base.fingerprint()  # the default interval: nothing changed
    assert len(set(prints[:-1]) | {base.fingerprint()}) == len(prints)


def test_the_round_that_ends_a_silence_and_one_whose_catalog_emptied_say_so() -> None:
    from tasks.config import public_base_url
    from tasks.core.render.links import with_links
    from tasks.core.render.round_alerts import render_empty_catalog_alert, silence_alerts

    prior, judgement = suspending_round(last_complete_ts=T0 - timedelta(hours=5), interval=timedelta(minutes=30))
    settled = settle_judged(prior, judgement, [], endpoints(), CFG, T0, round_id="acme/model@r2")
    silent = silence_alerts({MODEL: T0 - timedelta(hours=5)}, T0, timedelta(minutes=30),
                            ignore_lists={MODEL: settled.ignore})
    assert silent and [a for a in settled.alerts if a.kind == silent[0].kind] == [
        with_links(a, AlertLinks()) for a in silent]
    emptied = replace(prior, last_complete_ts=None, previous_results=judgement.results)
    none_left = settle_judged(emptied, results(T0, {}), [], [], CFG, T0, round_id="acme/model@r3")
    expected = render_empty_catalog_alert(MODEL, "acme/model@r3", T0, public_base_url(CFG), none_left.ignore)
    assert [a for a in none_left.alerts if a.kind == "empty_catalog"] == [with_links(expected, AlertLinks())]
    assert not [a for a in settled.alerts if a.kind == "empty_catalog"]


def test_a_per_run_mode_decides_in_its_mode_and_saves_in_the_stored_one() -> None:
    shadow = EndpointState(MODEL, "gamma", OBS, suspended_until=T0 + timedelta(days=1), suspended_at=T0,
                           ladder_step=1)
    prior, judgement = suspending_round()
    prior = replace(prior, mode=OBS, stored_mode=E, states={**prior.states, "gamma": shadow})
    settled = settle_judged(prior, judgement, [], endpoints(), CFG, T0, round_id="acme/model@r2")
    assert [(d.tag, d.action, d.actor) for d in settled.decisions] == [
        ("gamma", Action.WOULD_LIFT, "mode-switch"), ("beta", Action.WOULD_SUSPEND, "canary")]
    assert settled.state_mode is E and {s.mode for s in settled.states.values()} == {E}
    assert settled.states["beta"].is_suspended and not settled.states["gamma"].is_suspended


def test_settle_round_names_its_round_and_passes_the_run_on() -> None:
    from tasks.core.plan import make_round_id
    from tasks.core.settle import settle_round

    prior, _ = suspending_round()
    settled = settle_round(prior, [], endpoints(), CFG, T0, run_id="run-9", links=LINKS)
    assert settled.info.round_id == make_round_id(MODEL, T0) and settled.info.run_id == "run-9"
    assert settled.info.partial is False and settled.links == LINKS
    named = settle_round(prior, [], endpoints(), CFG, T0, round_id="acme/model@x", partial=True)
    assert (named.info.round_id, named.info.partial) == ("acme/model@x", True)


def test_only_a_newly_weak_probe_and_new_pin_mismatches_are_alerted() -> None:
    from tasks.core.judge import RoundFindings, RoundJudgement
    from tasks.core.types import ContractResult

    rows = results(T0, {t: {} for t in ("alpha", "beta", "gamma", "delta", "control")}).results
    judged = RoundJudgement(rows, RoundFindings(probe_weak=True, weak_controls=("control",),
                                                pin_mismatches=("beta", "gamma"),
                                                pin_evidence={"beta": "b", "gamma": "g"}))
    pinned = ContractResult("acme/model@r1", MODEL, "beta", Contract.TTFT, Outcome.INCONCLUSIVE, "pin_mismatch", "b")
    missed = ContractResult("acme/model@r1", MODEL, "control", Contract.REFUSAL, Outcome.INCONCLUSIVE,
                            "control_missed", "")

    def kinds(*previous: ContractResult) -> list[tuple[str, str | None]]:
        prior = Prior(model=MODEL, mode=E, previous_results=previous)
        settled = settle_judged(prior, judged, [], endpoints(), CFG, T0, round_id="acme/model@r2")
        return [(a.kind, a.tag) for a in settled.alerts]

    assert kinds(pinned) == [("probe_weak", None), ("pin_mismatch", "gamma")]
    assert kinds(pinned, missed) == [("pin_mismatch", "gamma")]


def test_a_partial_round_compares_only_its_probed_endpoints_with_the_last_round() -> None:
    from tasks.core.render.markdown import describe_changes

    prior, judgement = suspending_round()
    before = results(T0 - timedelta(minutes=30), {t: {} for t in ("alpha", "beta", "gamma", "delta", "control")})
    prior = replace(prior, previous_results=tuple(before.results))
    full = settle_judged(prior, judgement, [], endpoints(), CFG, T0, round_id="acme/model@r2")
    assert full.changes == tuple(describe_changes(before.results, judgement.results)) and full.changes
    assert full.prior_fingerprint == prior.fingerprint()
    probed_beta = results(T0, {"beta": {Contract.STRUCTURED: Outcome.FAIL}})
    partial = settle_judged(prior, probed_beta, [], endpoints(("beta",)), CFG, T0, round_id="acme/model@r3",
                            partial=True)
    expected = describe_changes([r for r in before.results if r.tag == "beta"], probed_beta.results)
    assert partial.changes == tuple(expected) and not any("not in this round" in c for c in partial.changes)
