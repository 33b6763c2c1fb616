"""The round's Prefect tasks: the imperative shell around the pure core.

Retries only where they cannot hide a fault: discovery and the DuckDB write window retry on transport-type
errors; a probe never retries (a transport outcome is data that freezes the streak, not something to hide).
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import httpx
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.clock import SystemClock
from tasks.config import CanaryConfig, load_config
from tasks.errors import CanaryError, StoreError
from tasks.plan import Probe, model_slug
from tasks.secrets import read_secret, redact
from tasks.types import (
    Attempt,
    Contract,
    ContractResult,
    Decision,
    Endpoint,
    EndpointState,
    ErrorClass,
    IgnoreList,
    Mode,
    Outcome,
    RoundInfo,
)

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


#: Tasks that open the DuckDB write window retry on a held lock, and only on that (or the network).
STORE_RETRIES: dict[str, Any] = {
    "cache_policy": NO_CACHE,
    "retries": 2,
    "retry_delay_seconds": [1, 3],
    "retry_condition_fn": _is_transport_exception,
}


@contextlib.contextmanager
def round_guard(model: str, logger: Any) -> Iterator[None]:
    """Two rounds of the same model never overlap: a Prefect global concurrency limit of 1 per model."""
    from tasks.concurrency import round_slot

    with round_slot(model, logger):
        yield


@task(
    name="discover",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=[2, 5],
    retry_condition_fn=_is_transport_exception,
)
def discover(cfg: CanaryConfig, model: str) -> list[Endpoint]:
    """List the endpoints that serve `model` (OpenRouter's endpoints API)."""
    from tasks.discover import fetch_endpoints

    key = read_secret("OPENROUTER_API_KEY", required=True)
    assert key is not None
    with httpx.Client(timeout=httpx.Timeout(cfg.read_timeout_s, connect=cfg.connect_timeout_s)) as client:
        return fetch_endpoints(client, cfg.base_url, key.get(), model)


_SSL_CONTEXT: ssl.SSLContext | None = None
_SSL_LOCK = threading.Lock()


def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process: loading the CA bundle costs 15-25 ms of CPU per client, which the
    probes running in the other threads would measure as latency (~1.5 s per round)."""
    global _SSL_CONTEXT
    with _SSL_LOCK:
        if _SSL_CONTEXT is None:
            _SSL_CONTEXT = httpx.create_ssl_context()
        return _SSL_CONTEXT


@task(name="warm-up", cache_policy=NO_CACHE)
def warm_up() -> None:
    """Build the language detector before any probe starts: building it holds the GIL for about a second,
    which would otherwise be measured as latency by the probes running in the other threads."""
    from tasks.langdetect import get_detector

    get_detector()
    _ssl_context()


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
    with httpx.Client(verify=_ssl_context()) as client:

        def once(n: int) -> Attempt:
            started = clock.now()
            try:
                return probe_once(
                    client,
                    base_url=cfg.base_url,
                    api_key=key.get(),
                    endpoint=probe.endpoint,
                    contract=probe.contract,
                    round_id=round_id,
                    attempt_no=n,
                    language=probe.language,
                    cfg=cfg,
                    clock=clock,
                )
            except Exception as exc:  # a bug of ours must not cost the other endpoints their results
                detail = redact(f"probe failed internally: {type(exc).__name__}: {exc}", key)[:300]
                log.warning("probe-%s-%s: %s", probe.endpoint.tag, probe.contract, detail)
                return Attempt(
                    round_id=round_id,
                    model=probe.endpoint.model,
                    tag=probe.endpoint.tag,
                    provider_name=probe.endpoint.provider_name,
                    contract=probe.contract,
                    attempt_no=n,
                    started_at=started,
                    language=probe.language,
                    error_class=ErrorClass.BAD_FRAME,
                    error_detail=detail,
                )

        attempts.append(once(1))
        if probe.contract is Contract.LANGUAGE and needs_confirmation(attempts[0]):
            attempts.extend([once(2), once(3)])
    return attempts


@dataclass(frozen=True)
class Judged:
    results: list[ContractResult]
    probe_weak: bool
    pin_mismatches: list[str]
    weak_controls: list[str]


@task(name="judge", cache_policy=NO_CACHE)
def judge(attempts: Sequence[Attempt], endpoints: Sequence[Endpoint], cfg: CanaryConfig) -> Judged:
    """Apply the contracts (pure) to the round's attempts."""
    from tasks.judge import judge_round

    verdict = judge_round(attempts, endpoints, cfg)
    return Judged(
        list(verdict.results),
        verdict.probe_weak,
        list(verdict.pin_mismatches),
        list(verdict.findings.weak_controls),
    )


@task(
    name="land",
    **STORE_RETRIES,  # type: ignore[arg-type]
)
def land(
    cfg: CanaryConfig,
    model: str,
    round_id: str,
    round_ts: datetime,
    endpoints: Sequence[Endpoint],
    attempts: Sequence[Attempt],
    judged: Judged,
) -> list[ContractResult]:
    """Land attempts and outcomes in one short write window (a rerun of the round id replaces its rows).

    Returns the previous complete round's results (for "what changed since last round").
    """
    from tasks import store

    info = RoundInfo(round_id=round_id, model=model, round_ts=round_ts, mode=cfg.mode)
    with store.open_store(cfg.db_path) as con:
        previous = store.complete_rounds(con, model=model, until=round_ts - timedelta(seconds=1))
        prev_results = (
            store.outcomes_of_round(con, str(previous.iloc[-1]["round_id"])) if len(previous) else []
        )
        store.land_round(con, info, attempts, endpoints=endpoints)
        store.land_outcomes(con, round_id, judged.results)
    return prev_results


@dataclass(frozen=True)
class RoundOutcome:
    decisions: list[Decision]
    ignore: IgnoreList
    statuses: dict[str, str]
    mode: Mode


@task(
    name="decide-and-publish",
    **STORE_RETRIES,  # type: ignore[arg-type]
)
def decide_and_publish(
    cfg: CanaryConfig,
    model: str,
    round_id: str,
    round_ts: datetime,
    endpoints: Sequence[Endpoint],
    judged: Judged,
    mode_override: str | None = None,
) -> RoundOutcome:
    """Round status (pandas) -> policy -> state, decisions and the merged ignore list, then publish it.

    The mode is `mode_override` (a `--mode` flag) else the admin's `canary mode` setting else the config.
    A rerun of a round the policy already saw lands its rows again but is not decided twice.
    """
    from tasks import store, variable_sync
    from tasks.exclusions import excluded_layers, load_builtin
    from tasks.policy import PolicyConfig, RoundInput, decide
    from tasks.publish import current_ignore_list, publish_ignore_list
    from tasks.verdicts import results_frame, round_status, status_map

    statuses = status_map(round_status(results_frame(judged.results)))
    tags = [e.tag for e in endpoints]
    decisions: list[Decision] = []
    ui_value = variable_sync.fetch_variable()  # outside the write window: Prefect may be slow
    with store.open_store(cfg.db_path) as con:
        variable_value = variable_sync.reconcile(con, round_ts, ui_value)
        mode = Mode(mode_override or store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value)
        applied = store.get_setting(con, f"policy_applied:{model}", None)
        if applied is None or datetime.fromisoformat(applied) < round_ts:
            with store.transaction(con):  # all of the policy step, or none of it
                builtin = load_builtin(cfg.exclusions_file) if os.path.exists(cfg.exclusions_file) else []
                excluded = excluded_layers(
                    model, tags, builtin, store.active_exclusions(con, round_ts), round_ts
                )
                states = load_policy_states(con, model, mode)
                rnd = RoundInput(
                    round_id=round_id,
                    round_ts=round_ts,
                    model=model,
                    statuses=statuses,
                    discovered=tuple(sorted(tags)),
                    excluded=excluded,
                )
                new_states, decisions = decide(states, rnd, replace(PolicyConfig.from_config(cfg), mode=mode))
                replace_policy_states(con, model, mode, list(new_states.values()))
                store.append_decisions(con, decisions)
                store.set_setting(con, f"policy_applied:{model}", round_ts.isoformat())
        else:
            log.warning(
                "Round %s was already decided; its rows were landed again, the policy is not re-run", round_id
            )
        store.complete_round(con, round_id, statuses, at=round_ts)
        ignore = current_ignore_list(con, cfg, model, tags, round_ts)
    publish_ignore_list(cfg, ignore, artifact=False)  # the artifact is created with the round summary
    if variable_value is not None and variable_sync.write_variable(variable_value):
        with store.open_store(cfg.db_path) as con:
            variable_sync.mark_synced(con, variable_value)
    return RoundOutcome(decisions, ignore, {t: str(s) for t, s in statuses.items()}, mode)


def load_policy_states(con: Any, model: str, mode: Mode) -> dict[str, EndpointState]:
    """The model's states in `mode`, seeded from the other mode's rows where `mode` has none (a switch)."""
    from tasks import store

    other = Mode.OBSERVE if mode is Mode.ENFORCE else Mode.ENFORCE
    return {**store.load_states(con, model, other), **store.load_states(con, model, mode)}


def replace_policy_states(con: Any, model: str, mode: Mode, states: Sequence[EndpointState]) -> None:
    """One state per endpoint: the current mode's. Stale rows of the other mode would leak suspensions."""
    from tasks import store

    store.save_states(con, list(states))
    con.execute("DELETE FROM endpoint_state WHERE model = ? AND mode <> ?", [model, str(mode)])


@task(name="publish-round-artifact", cache_policy=NO_CACHE)
def publish_round_artifact(
    cfg: CanaryConfig,
    model: str,
    round_id: str,
    round_ts: datetime,
    judged: Judged,
    outcome: RoundOutcome,
    mode: Mode,
    previous: Sequence[ContractResult],
) -> None:
    """The round summary (endpoints x contracts, decisions, changes) and the ignore-list artifact."""
    from prefect.artifacts import create_markdown_artifact

    from tasks.publish import create_ignore_artifact
    from tasks.render import describe_changes, render_round_markdown

    info = RoundInfo(round_id=round_id, model=model, round_ts=round_ts, mode=mode)
    md = render_round_markdown(
        info, judged.results, outcome.decisions, outcome.ignore, describe_changes(previous, judged.results)
    )
    create_markdown_artifact(key=f"round-{model_slug(model)}", markdown=md, description=f"Round {round_id}")
    create_ignore_artifact(outcome.ignore)


def _run_logger() -> Any:
    """The run logger (the Prefect UI shows it; alerts without Slack are read there), `log` outside a run."""
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return log


@task(name="alert", cache_policy=NO_CACHE)
def alert(
    cfg: CanaryConfig,
    model: str,
    round_id: str,
    round_ts: datetime,
    judged: Judged,
    outcome: RoundOutcome,
    attempts: Sequence[Attempt],
    previous: Sequence[ContractResult] = (),
) -> int:
    """Queue this round's transitions in the outbox, then flush the outbox (earlier failures included).

    probe_weak and pin_mismatch are alerted when they start, not again while they last: `previous` is the
    last complete round's results.
    """
    from tasks import store
    from tasks.alerts import SlackSettings, flush_outbox
    from tasks.judge import findings_from_results
    from tasks.render import alerts_for_round

    before = findings_from_results(previous, cfg)
    alerts = alerts_for_round(
        model,
        round_id,
        round_ts,
        outcome.decisions,
        judged.probe_weak and not before.probe_weak,
        [t for t in judged.pin_mismatches if t not in before.pin_mismatches],
        outcome.ignore,
        results=judged.results,
        attempts=attempts,
        passed_controls=judged.weak_controls,
    )
    settings = SlackSettings.from_env()
    with store.open_store(cfg.db_path) as con:
        store.enqueue_alerts(con, alerts)
        summary = flush_outbox(con, settings, round_ts, _run_logger())
    return int(summary.sent)


__all__ = [
    "CanaryError",
    "Judged",
    "RoundOutcome",
    "alert",
    "decide_and_publish",
    "discover",
    "judge",
    "land",
    "previous_languages",
    "probe",
    "publish_round_artifact",
    "resolve_config",
    "round_guard",
]
