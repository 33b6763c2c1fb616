"""Read what a round needs from the past (`Prior`), and land what earlier rounds left behind (shell, no Prefect).

    with open_store(db) as con:
        land_leftovers(con, cfg, model, round_id, judged_spools, now)  # deferred rounds, then failed/crashed marks
        prior = read_prior(con, cfg, model, round_ts)

Both run inside one write window: at the start of a round (`load_prior`) and again inside the save window,
so a round always settles against the newest history even when another process changed it meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from tasks import store
from tasks.alerts.links import round_links
from tasks.config import CanaryConfig
from tasks.core.exclusions import load_builtin
from tasks.core.judge import RoundJudgement, judge_round
from tasks.core.settle import Prior, Settlement, run_modes, settle_judged
from tasks.core.types import Mode, RoundInfo, RoundState
from tasks.errors import RoundIdTaken
from tasks.spool.journal import (
    PROBES_SUFFIX,
    SPOOL_SUFFIX,
    DeadRound,
    SpooledRound,
    round_journals,
    spool_dirs,
    spooled_rounds,
)
from tasks.spool.probes import kept_probes, probes_name
from tasks.store.alert_threads import suspension_threads
from tasks.store.settlement import (
    mark_crashed,
    mark_failed,
    policy_applied,
    save_settlement,
    stored_round_state,
    unfinished_rounds,
)
from tasks.store.state import load_policy_states

_log = logging.getLogger("canary.round")


def read_prior(con: store.Connection, cfg: CanaryConfig, model: str, round_ts: datetime) -> Prior:
    """Everything the round of `model` at `round_ts` needs from the store and the builtin file (its mode: the
    run's own `cfg.run_mode`, else the admin's `canary mode`, else `cfg.mode`)."""
    mode, stored_mode = run_modes(cfg.run_mode, store.get_setting(con, store.MODE_KEY), cfg.mode)
    states = load_policy_states(con, model, stored_mode or mode)
    last, full = store.latest_complete_rounds(con, model, before=round_ts - timedelta(seconds=1))
    builtin = load_builtin(cfg.exclusions_file)
    return Prior(
        model=model,
        mode=mode,
        states=states,
        previous_results=tuple(store.outcomes_of_round(con, str(full["round_id"]))) if full is not None else (),
        previous_languages=store.last_language_outcomes(con, model),
        builtin=tuple(builtin),
        operational=tuple(store.active_exclusions(con, round_ts)),
        decided_until=policy_applied(con, model),
        last_complete_ts=last["round_ts"].astimezone(UTC) if last is not None else None,
        interval=timedelta(minutes=cfg.interval_min),
        last_full_tags=tuple(full["endpoints"]) if full is not None else (),
        stored_mode=stored_mode,
        suspension_evidence=store.suspension_evidence(
            con, model, [t for t, st in states.items() if st.is_suspended]
        ),
        threads=suspension_threads(con, model, [t for t, st in states.items() if st.is_suspended]),
    )


@dataclass(frozen=True)
class JudgedSpool:
    """A deferred round read from disk and judged (outside any lock): ready to settle and land."""

    spool: SpooledRound
    judgement: RoundJudgement


def judge_spools(db_path: str, cfg: CanaryConfig) -> list[JudgedSpool]:
    """Every deferred round on disk, judged (CPU work, done before the write window opens)."""
    return [JudgedSpool(s, judge_round(s.attempts, s.endpoints, cfg)) for s in spooled_rounds(db_path)]


def settle_and_save(
    con: store.Connection, cfg: CanaryConfig, info: RoundInfo,
    judgement: RoundJudgement, attempts: Sequence[object], endpoints: Sequence[object], *,
    landed_at: datetime, deferred: bool = False, settled: Settlement | None = None,
) -> Settlement:
    """Inside a write window: settle against the current prior (reusing `settled` when its prior is still
    current) and save it all in one transaction. `cfg.run_mode`: the mode of the run that probed the round."""
    prior = read_prior(con, cfg, info.model, info.round_ts)
    if settled is None or settled.prior_fingerprint != prior.fingerprint():
        settled = settle_judged(prior, judgement, attempts, endpoints, cfg, info.round_ts,  # type: ignore[arg-type]
                                round_id=info.round_id, partial=info.partial, run_id=info.run_id,
                                extra_alerts=settled.extra_alerts if settled is not None else (),
                                links=settled.links if settled is not None else round_links(cfg))
    save_settlement(con, settled, landed_at=landed_at, deferred=deferred)
    return settled


def spooled_run_config(cfg: CanaryConfig, spool: SpooledRound) -> CanaryConfig:
    """`cfg` with the per-run mode of the run that spooled the round (it lands in the mode it probed in)."""
    return replace(cfg, run_mode=Mode(spool.mode_override) if spool.mode_override else None)


def land_leftovers(
    con: store.Connection, cfg: CanaryConfig, model: str, current_round_id: str,
    spools: Sequence[JudgedSpool], now: datetime,
) -> list[str]:
    """Land deferred rounds (oldest first), then the probes that dead rounds of `model` kept (`_land_kept`), then
    end `model`'s rounds that never finished: `failed` with its error when its journal says the round raised
    (its process could not record it), else `crashed` with the step it reached once its process is gone: a
    round whose journal names a process that still runs (tasks/runtime/liveness.py: pid, host and start time) is left
    alone, whatever its row says. Returns one line per thing done (for the run log)."""
    done: list[str] = []
    landed = {js.spool.info.round_id for js in spools if _land_spool(con, cfg, js, now, done)}
    trail = round_journals(cfg.db_path, model, besides=current_round_id)
    live = {d.info.round_id for d in trail if d.alive}  # its process still runs: never marked crashed
    journals = {d.info.round_id: d for d in trail if not d.alive}
    _land_dead_rounds_kept(con, cfg, journals, landed, now, done)
    _end_unfinished_rows(con, cfg, model, current_round_id, journals, landed | live, now, done)
    for dead in journals.values():  # died before its round row was written, or after it was saved
        status = stored_round_state(con, dead.info.round_id)
        if dead.info.round_id in landed:
            pass  # kept in the spool when its store failed, landed above
        elif status is None:
            done.append(_end_round(con, dead.info, dead.step, dead.error, now, started_at=dead.started_at))
        elif status == RoundState.COMPLETE:
            done.append(f"round {dead.info.round_id} was saved; its process died during step {dead.step}")
        _forget(cfg, dead)
    return done


def _land_dead_rounds_kept(con: store.Connection, cfg: CanaryConfig, journals: dict[str, DeadRound],
                           landed: set[str], now: datetime, done: list[str]) -> None:
    """A dead round's kept probes land, as the round or a partial one: its id joins `landed`, its journal leaves
    `journals`."""
    for rid, kept in list(journals.items()):
        if rid not in landed and kept.error is None and stored_round_state(con, rid) != RoundState.COMPLETE \
                and _land_kept(con, cfg, kept, now, done):
            landed.add(rid)
            del journals[rid]
            _forget(cfg, kept)


def _end_unfinished_rows(con: store.Connection, cfg: CanaryConfig, model: str, current_round_id: str,
                         journals: dict[str, DeadRound], spared: set[str], now: datetime, done: list[str]) -> None:
    """End each unfinished round row of `model` not in `spared` (landed, or its process alive): failed or crashed,
    with the step its journal (taken out of `journals`) or its row says."""
    for row in unfinished_rounds(con, model, besides=current_round_id):
        rid = str(row["round_id"])
        if rid in spared:
            continue
        dead = journals.pop(rid, None)
        step = dead.step if dead is not None else str(row.get("step") or "unknown")
        info = RoundInfo(rid, model, row["round_ts"], Mode(str(row["mode"])),  # type: ignore[arg-type]
                         run_id=dead.info.run_id if dead is not None else None)
        done.append(_end_round(con, info, step, dead.error if dead is not None else None, now))
        if dead is not None:
            _forget(cfg, dead)


def _land_spool(con: store.Connection, cfg: CanaryConfig, js: JudgedSpool, now: datetime, done: list[str]) -> bool:
    """Land one deferred round and delete its file (True). A spooled round whose id another run's round holds
    is set aside as `<stem>.refused.json` (kept for a human, said in `done`) instead of blocking every round
    after it (False)."""
    s = js.spool
    try:
        settle_and_save(con, spooled_run_config(cfg, s), s.info, js.judgement, s.attempts, s.endpoints,
                        landed_at=now, deferred=True)
    except RoundIdTaken as exc:
        kept = s.path.with_name(s.path.name.removesuffix(SPOOL_SUFFIX) + ".refused.json") if s.path else None
        if s.path is not None and kept is not None:
            s.path.replace(kept)
        done.append(f"deferred round {s.info.round_id} not landed: {exc}; its attempts are kept in {kept}")
        return False
    if s.path is not None:
        s.path.unlink(missing_ok=True)
    done.append(f"landed deferred round {s.info.round_id} ({len(s.attempts)} attempts)")
    return True


def _forget(cfg: CanaryConfig, dead: DeadRound) -> None:
    """A dead round is dealt with: its journal goes, and the probes it kept (landed, saved by itself, or of a
    round that failed: a failed round is never judged)."""
    dead.journal.unlink(missing_ok=True)
    for directory in spool_dirs(cfg.db_path):
        (directory / probes_name(dead.journal.name)).unlink(missing_ok=True)


def _land_kept(con: store.Connection, cfg: CanaryConfig, dead: DeadRound, now: datetime, done: list[str]) -> bool:
    """Land the probes a dead round kept beside its journal (tasks/spool/probes.py), judged and settled like a
    deferred round: the round it was when its probing had ended, else a partial round of the endpoints whose
    probes all ended. False (and its file set aside, said in `done`) when it kept none or cannot be landed: the
    round is then marked as before."""
    kept = kept_probes(cfg.db_path, dead.journal.name)
    if kept is None:
        return False
    info = dead.info if kept.complete else replace(dead.info, partial=True)
    try:
        judgement = judge_round(kept.attempts, kept.endpoints, cfg)
        settle_and_save(con, replace(cfg, run_mode=Mode(dead.mode_override) if dead.mode_override else None), info,
                        judgement, kept.attempts, kept.endpoints, landed_at=now, deferred=True)
    except Exception as exc:  # another run's round holds the id, or a bug: never block the rounds after it
        aside = kept.path.with_name(kept.path.name.removesuffix(PROBES_SUFFIX) + ".unlanded.jsonl")
        kept.path.replace(aside)
        done.append(f"round {info.round_id}: the probes it kept were not landed ({type(exc).__name__}: "
                    f"{str(exc).splitlines()[0][:200] if str(exc) else ''}); kept in {aside}")
        return False
    kept.path.unlink(missing_ok=True)
    how = "" if kept.complete else f" as a partial round (it died during step {dead.step})"
    done.append(f"landed round {info.round_id} from the probes it kept ({len(kept.attempts)} attempts of "
                f"{len(kept.endpoints)} endpoints){how}")
    return True


def _end_round(con: store.Connection, info: RoundInfo, step: str, error: str | None, now: datetime, *,
               started_at: datetime | None = None) -> str:
    """A round that will never finish: `failed` with the error its journal kept, else `crashed`."""
    if error is not None:
        mark_failed(con, info, step=step, error=error, at=now, started_at=started_at)
        return f"round {info.round_id} failed during step {step}: {error}"
    mark_crashed(con, info, step=step, at=now, started_at=started_at)
    return f"round {info.round_id} crashed during step {step}"
