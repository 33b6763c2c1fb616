"""The round's Prefect tasks: the imperative shell around the pure core.

Retries only where they cannot hide a fault: discovery and the DuckDB write window retry on transport-type
errors; a probe never retries (a transport outcome is data that freezes the streak, not something to hide).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import httpx
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.clock import SystemClock
from tasks.config import CanaryConfig, load_config
from tasks.errors import CanaryError, StoreError
from tasks.plan import Probe, model_slug
from tasks.secrets import read_secret
from tasks.types import Attempt, Contract, Decision, Endpoint, IgnoreList, Mode, Outcome, RoundInfo

log = logging.getLogger("canary")


def resolve_config(
    config_path: str | None,
    overrides: dict[str, Any] | None,
    *,
    base_url: str | None = None,
    db_path: str | None = None,
    mode: str | None = None,
) -> CanaryConfig:
    cfg = load_config(config_path)
    extra: dict[str, Any] = dict(overrides or {})
    if base_url:
        extra["base_url"] = base_url
    if db_path:
        extra["db_path"] = db_path
    if mode:
        extra["mode"] = mode
    return cfg.with_overrides(extra) if extra else cfg


def _is_transport_exception(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect retry condition: retry only errors of the network or of the store's lock."""
    try:
        state.result()
    except (httpx.TransportError, StoreError):
        return True
    except Exception:
        return False
    return False


@contextlib.contextmanager
def round_guard(model: str, logger: Any) -> Iterator[None]:
    """Two rounds of the same model never overlap: a Prefect global concurrency limit of 1 per model."""
    from tasks.concurrency import round_slot

    with round_slot(model, logger):
        yield


@task(name="discover", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 5],
      retry_condition_fn=_is_transport_exception)
def discover(cfg: CanaryConfig, model: str) -> list[Endpoint]:
    """List the endpoints that serve `model` (OpenRouter's endpoints API)."""
    from tasks.discover import fetch_endpoints

    key = read_secret("OPENROUTER_API_KEY", required=True)
    assert key is not None
    with httpx.Client(timeout=httpx.Timeout(cfg.read_timeout_s, connect=cfg.connect_timeout_s)) as client:
        return fetch_endpoints(client, cfg.base_url, key.get(), model)


@task(name="previous-languages", cache_policy=NO_CACHE)
def previous_languages(cfg: CanaryConfig, model: str) -> dict[str, tuple[str, Outcome]]:
    """Each endpoint's language outcome in the last complete round (drives the rotation)."""
    from tasks import store

    with store.open_store(cfg.db_path) as con:
        return store.last_language_outcomes(con, model)


@task(name="probe", task_run_name="probe-{probe.endpoint.tag}-{probe.contract}", cache_policy=NO_CACHE)
def probe(probe: Probe, round_id: str, cfg: CanaryConfig) -> list[Attempt]:
    """Send the pinned probe; for the language contract, confirm a first failure with two more attempts."""
    from tasks.contracts.language import needs_confirmation
    from tasks.probe import probe_once

    key = read_secret("OPENROUTER_API_KEY", required=True)
    assert key is not None
    clock = SystemClock()
    attempts: list[Attempt] = []
    with httpx.Client() as client:

        def once(n: int) -> Attempt:
            return probe_once(
                client, base_url=cfg.base_url, api_key=key.get(), endpoint=probe.endpoint,
                contract=probe.contract, round_id=round_id, attempt_no=n, language=probe.language,
                cfg=cfg, clock=clock,
            )

        attempts.append(once(1))
        if probe.contract is Contract.LANGUAGE and needs_confirmation(attempts[0]):
            attempts.extend([once(2), once(3)])
    return attempts


@dataclass(frozen=True)
class Judged:
    results: list[Any]  # list[ContractResult]
    probe_weak: bool
    pin_mismatches: list[str]


@task(name="judge", cache_policy=NO_CACHE)
def judge(attempts: Sequence[Attempt], endpoints: Sequence[Endpoint], cfg: CanaryConfig) -> Judged:
    """Apply the contracts (pure) to the round's attempts."""
    from tasks.judge import judge_round

    verdict = judge_round(attempts, endpoints, cfg)
    return Judged(list(verdict.results), verdict.probe_weak, list(verdict.pin_mismatches))


@task(name="land", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[1, 3],
      retry_condition_fn=_is_transport_exception)
def land(
    cfg: CanaryConfig, model: str, round_id: str, round_ts: datetime, endpoints: Sequence[Endpoint],
    attempts: Sequence[Attempt], judged: Judged,
) -> None:
    """Land attempts and outcomes in one short write window (a rerun of the round id replaces its rows)."""
    from tasks import store

    info = RoundInfo(round_id=round_id, model=model, round_ts=round_ts, mode=cfg.mode)
    with store.open_store(cfg.db_path) as con:
        store.land_round(con, info, attempts, endpoints=endpoints)
        store.land_outcomes(con, round_id, judged.results)


@dataclass(frozen=True)
class RoundOutcome:
    decisions: list[Decision]
    ignore: IgnoreList
    statuses: dict[str, str]


@task(name="decide-and-publish", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[1, 3],
      retry_condition_fn=_is_transport_exception)
def decide_and_publish(
    cfg: CanaryConfig, model: str, round_id: str, round_ts: datetime, endpoints: Sequence[Endpoint],
    judged: Judged,
) -> RoundOutcome:
    """Round status (pandas) -> policy -> state, decisions and the merged ignore list, then publish it."""
    from tasks import store
    from tasks.policy import PolicyConfig, RoundInput, decide
    from tasks.publish import current_ignore_list, publish_ignore_list
    from tasks.verdicts import results_frame, round_status

    status_frame = round_status(results_frame(judged.results))
    statuses = {str(r.tag): str(r.status) for r in status_frame.itertuples()}
    pcfg = PolicyConfig.from_config(cfg)
    with store.open_store(cfg.db_path) as con:
        mode = Mode(store.get_setting(con, "mode", cfg.mode.value)) if not _mode_forced(cfg) else cfg.mode
        pcfg = replace(pcfg, mode=mode)
        excluded = store.excluded_layers(con, model, [e.tag for e in endpoints], round_ts, cfg)
        states = store.load_states(con, model, mode)
        rnd = RoundInput(
            round_id=round_id, round_ts=round_ts, model=model,
            statuses={t: _status(s) for t, s in statuses.items()},
            discovered=tuple(sorted(e.tag for e in endpoints)), excluded=excluded,
        )
        new_states, decisions = decide(states, rnd, pcfg)
        store.save_states(con, list(new_states.values()))
        store.append_decisions(con, decisions)
        store.complete_round(con, round_id, statuses)
        ignore = current_ignore_list(con, cfg, model, [e.tag for e in endpoints], round_ts)
    publish_ignore_list(cfg, ignore)
    return RoundOutcome(decisions, ignore, statuses)


def _mode_forced(cfg: CanaryConfig) -> bool:
    return False


def _status(s: str) -> Any:
    from tasks.types import RoundStatus

    return RoundStatus(s)


@task(name="publish-round-artifact", cache_policy=NO_CACHE)
def publish_round_artifact(
    cfg: CanaryConfig, model: str, round_id: str, round_ts: datetime, judged: Judged, outcome: RoundOutcome
) -> None:
    from prefect.artifacts import create_markdown_artifact

    from tasks.render import render_round_markdown

    md = render_round_markdown(model, round_id, round_ts, judged.results, outcome.decisions, outcome.ignore)
    create_markdown_artifact(key=f"round-{model_slug(model)}", markdown=md, description=f"Round {round_id}")


@task(name="alert", cache_policy=NO_CACHE)
def alert(
    cfg: CanaryConfig, model: str, round_id: str, round_ts: datetime, judged: Judged, outcome: RoundOutcome
) -> int:
    """Queue alerts for this round's transitions in the outbox, then flush the outbox (retries included)."""
    from tasks import store
    from tasks.alerts import SlackSettings, flush_outbox
    from tasks.render import alerts_for_round

    alerts = alerts_for_round(model, round_id, round_ts, outcome.decisions, judged.probe_weak,
                              judged.pin_mismatches, outcome.ignore)
    with store.open_store(cfg.db_path) as con:
        store.enqueue_alerts(con, alerts)
        summary = flush_outbox(con, SlackSettings.from_env(), round_ts, log)
    return int(getattr(summary, "sent", 0))


__all__ = [
    "CanaryError", "Judged", "RoundOutcome", "alert", "decide_and_publish", "discover", "judge", "land",
    "previous_languages", "probe", "publish_round_artifact", "resolve_config", "round_guard",
]
