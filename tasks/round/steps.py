"""The round's steps: the imperative shell around the pure core (tasks/core/), each a plain call inside the round's
flow run (its log is the flow run's).

    load_prior -> discover -> probe (tasks/round/probe_task.py) -> settle (pure) -> save (one transaction, or
    spooled) -> publish -> deliver (Slack, no database lock held)

Retries only where they cannot hide a fault (`with_retries`): discovery retries network errors, a cycle reruns a
model's round the orchestrator refused (`is_orchestrator_blip`); a probe never retries (a transport outcome is
data that freezes the streak, not something to hide). The store's lock is not retried: each window waits a
bounded time, and a round that cannot get its write window is spooled to disk (deferred) instead of failing.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx

from tasks.config import CanaryConfig
from tasks.core.policy import PolicyConfig, too_soon
from tasks.core.render.text import name
from tasks.core.settle import Prior, Settlement, resolve_mode, settle_round
from tasks.core.types import Alert, Attempt, Endpoint, RoundInfo, RoundState
from tasks.errors import StoreError
from tasks.probe.http_errors import is_retryable_exception
from tasks.runtime.clock import utcnow
from tasks.runtime.secrets import read_secret
from tasks.spool.journal import Journal

log = logging.getLogger("canary")
T = TypeVar("T")

#: How long the first window of a round waits for the lock, seconds. Without it the round still probes.
PRIOR_LOCK_TIMEOUT_S = 10.0
#: How long the save window waits for the lock before the round is spooled to disk (deferred), seconds.
SAVE_LOCK_TIMEOUT_S = 20.0


#: Discovery's waits before its second and third try (network errors only).
DISCOVER_RETRY_DELAYS_S = (2.0, 5.0)


def with_retries(call: Callable[[], T], retry_if: Callable[[BaseException], bool], delays: Sequence[float],
                 what: str, sleep: Callable[[float], None] = time.sleep) -> T:
    """`call()`, tried again after each of `delays` while it raises an error `retry_if` accepts (one of
    tasks/probe/http_errors.py's predicates, the one home of retry conditions); each retry is logged."""
    for delay in delays:
        try:
            return call()
        except Exception as exc:
            if not retry_if(exc):
                raise
            _run_logger().warning("%s failed (%s: %s); retrying in %g s", what, type(exc).__name__,
                                  str(exc).splitlines()[0][:200] if str(exc) else "", delay)
        sleep(delay)
    return call()


@contextlib.contextmanager
def round_guard(model: str, logger: Any, db_path: str) -> Iterator[str | None]:
    """Two rounds of the same model never overlap: a Prefect global concurrency limit of 1 per model, held under a
    lease (yielded: the round's journal records it, so the next round frees the slot of a dead holder at once:
    tasks/orchestration/round_slots.py)."""
    from tasks.orchestration.round_slots import round_slot

    with round_slot(model, logger, db_path=db_path) as lease_id:
        yield lease_id


def flow_run_id() -> str | None:
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    return str(ctx.flow_run.id) if ctx is not None and ctx.flow_run is not None else None


def load_prior(cfg: CanaryConfig, model: str, round_id: str, round_ts: datetime,
               run_id: str | None = None, sync_variable: bool = True) -> tuple[Prior, Any]:
    """One short window: land what earlier rounds left (deferred, failed, crashed), sync the operational
    Variable (unless a cycle did it for its rounds: `sync_variable` False), read the prior and mark this round
    running. A busy store costs the round nothing but its rotation memory: it probes anyway and settles against
    the store inside its save window. A round id another run's round holds: RoundIdTaken, before anything is
    probed."""
    from tasks.core.canary_events import crashed_round_events
    from tasks.ignore_list import variable_sync
    from tasks.orchestration.prefect_events import emit_canary_events
    from tasks.round.first_window import FirstWindow, first_window
    from tasks.round.write_window import judge_spools

    logger = _run_logger()
    # outside the window: Prefect may be slow (UNREACHABLE: nothing to reconcile, nothing written)
    ui_value = variable_sync.fetch_variable() if sync_variable else variable_sync.UNREACHABLE
    spools = judge_spools(cfg.db_path, cfg)
    try:  # one window, shared with the rounds of this process asking at the same moment (tasks/round/first_window.py)
        answered = first_window(FirstWindow(cfg, model, round_id, round_ts, run_id, ui_value, spools),
                                PRIOR_LOCK_TIMEOUT_S)
    except StoreError as exc:
        from tasks.alerts.store_alarm import alarm_unreadable_store

        alarm_unreadable_store(cfg.db_path, exc, utcnow(), logger)
        logger.warning("Round %s probes without its history (the store cannot be used): %s", round_id, exc)
        return Prior(model=model, mode=resolve_mode(cfg.run_mode, None, cfg.mode), available=False), None
    for line in answered.leftovers:
        logger.warning("%s", line)
    emit_canary_events(crashed_round_events(model, answered.leftovers, utcnow()), logger)  # the marks are saved
    variable_value = answered.variable_value
    if variable_value is not None and not variable_sync.write_variable(variable_value):
        variable_value = None
    assert answered.prior is not None
    return answered.prior, variable_value


def discover(cfg: CanaryConfig, model: str) -> list[Endpoint]:
    """List the endpoints that serve `model` (OpenRouter's endpoints API); network errors are tried twice more."""
    from tasks.probe.discover import fetch_endpoints

    key = read_secret("OPENROUTER_API_KEY", required=True)
    assert key is not None

    def listing() -> list[Endpoint]:
        with httpx.Client(timeout=httpx.Timeout(cfg.read_timeout_s, connect=cfg.connect_timeout_s)) as client:
            return fetch_endpoints(client, cfg.base_url, key.get(), model)

    return with_retries(listing, is_retryable_exception, DISCOVER_RETRY_DELAYS_S, f"discovery of {model}")


def settle(prior: Prior, attempts: Sequence[Attempt], endpoints: Sequence[Endpoint], cfg: CanaryConfig,
           round_ts: datetime, round_id: str, partial: bool = False, extra_alerts: Sequence[Alert] = (),
           run_id: str | None = None, flow_run_id: str | None = None) -> Settlement:
    """The pure core: outcomes, round statuses, policy, ignore list and alerts (`partial`: a confirmation
    round, `endpoints` the probed ones; `extra_alerts`: the round's own, e.g. the budget footprint's; `run_id`:
    the run that chose the round's time; `flow_run_id`: the round's own flow run, which its alerts link to)."""
    from tasks.alerts.links import round_links

    settled = settle_round(prior, attempts, endpoints, cfg, round_ts, round_id=round_id, partial=partial,
                           extra_alerts=extra_alerts, run_id=run_id, links=round_links(cfg, flow_run_id))
    held = too_soon(prior.states, settled.statuses, round_ts, PolicyConfig.from_config(cfg)) if settled.decided else ()
    if held:  # recorded and shown, not counted: say why the streak did not move
        _run_logger().info("Round %s: %s not counted towards a streak: less than confirm_after_min (%d min) after "
                           "the round that last grew it", round_id, ", ".join(name(t, "log", 80) for t in held),
                           cfg.confirm_after_min)
    return settled


def save(cfg: CanaryConfig, settled: Settlement, variable_value: Any = None) -> tuple[Settlement, RoundState]:
    """ONE write transaction for the round (after landing anything older), or a spool file when the window
    cannot be had in time. Returns the settlement as saved and `complete` or `deferred`; a store that cannot be
    read or written (not merely busy) raises StoreError once the round is kept (`keep_unsaved`)."""
    from tasks import store
    from tasks.core.canary_events import crashed_round_events
    from tasks.ignore_list import variable_sync
    from tasks.orchestration.prefect_events import emit_canary_events
    from tasks.round.write_window import judge_spools, land_leftovers, settle_and_save

    info = settled.info
    spools = judge_spools(cfg.db_path, cfg)
    try:
        with store.open_store(cfg.db_path, lock_timeout_s=SAVE_LOCK_TIMEOUT_S, snapshot=False) as con:
            leftovers = land_leftovers(con, cfg, info.model, info.round_id, spools, utcnow())
            for line in leftovers:
                _run_logger().warning("%s", line)
            saved = settle_and_save(con, cfg, info, settled.judgement, settled.attempts, settled.endpoints,
                                    landed_at=utcnow(), settled=settled)
            if variable_value is not None:
                variable_sync.mark_synced(con, variable_value)
        emit_canary_events(crashed_round_events(info.model, leftovers, utcnow()), _run_logger())  # after the save
        return saved, RoundState.COMPLETE
    except StoreError as exc:
        return keep_unsaved(cfg, settled, exc), RoundState.DEFERRED


def keep_unsaved(cfg: CanaryConfig, settled: Settlement, exc: StoreError) -> Settlement:
    """The round's attempts to the spool (beside the database, else the fallback directory), to land with the
    next round that gets the store. Busy: that is all (`deferred`). Otherwise a loud failure: the direct alert
    (tasks/alerts/store_alarm.py), then StoreError, so the round's flow run fails and `canary run` exits 1. Attempts
    that no directory takes: the spool's alert too, and SpoolError."""
    from tasks.alerts.store_alarm import alarm_unreadable_store, alarm_unwritable_spool
    from tasks.errors import SpoolError
    from tasks.spool.journal import SpooledRound, spool_round

    info, logger = settled.info, _run_logger()
    alarm_unreadable_store(cfg.db_path, exc, utcnow(), logger)
    try:
        run_mode = str(cfg.run_mode) if cfg.run_mode is not None else None
        kept = spool_round(cfg.db_path, SpooledRound(info, run_mode, settled.endpoints, settled.attempts, utcnow()))
    except SpoolError as lost:
        alarm_unwritable_spool(cfg.db_path, lost, utcnow(), logger)
        raise SpoolError(f"round {info.round_id} lost its {len(settled.attempts)} attempts: {exc}; {lost}") from exc
    where = f"its {len(settled.attempts)} attempts wait in {kept.path} and land with the next round that gets the store"
    if exc.busy:
        logger.warning("Round %s deferred: %s; %s", info.round_id, exc, where)
        return settled
    raise StoreError(f"{exc} (round {info.round_id} not saved; {where})") from exc


def record_failure(cfg: CanaryConfig, journal: Journal, exc: Exception, artifacts: bool) -> str:
    """A round that raised, in its own process: say why where the operator looks, then the caller re-raises (the
    flow run fails, `canary run` exits 1). The journal keeps the error first (the next round of the model marks
    the round `failed` with it when the store cannot take it now); then the round's row becomes `failed` with
    the step and the error, and the journal is done; then the log line and the round's artifact. A store that
    failed as a file (StoreError: damaged, a full disk) is not written again (a write can only damage it more):
    its round waits in the spool and the journal. `crashed` stays for a round whose process is gone. Returns the
    one-line error."""
    from tasks import store
    from tasks.store.rows import one_line
    from tasks.store.settlement import mark_failed

    error = one_line(f"{type(exc).__name__}: {exc}", 500) or type(exc).__name__
    step, info, logger = journal.step_name, journal.info, _run_logger()
    journal.fail(error)
    if isinstance(exc, StoreError) or isinstance(exc.__cause__, StoreError):
        logger.warning("Round %s: its failure stays in its journal beside the database; the next round that can "
                       "use the store records it", info.round_id)
    else:
        try:
            with store.open_store(cfg.db_path, lock_timeout_s=PRIOR_LOCK_TIMEOUT_S, snapshot=False) as con:
                mark_failed(con, info, step=step, error=error, at=utcnow(), started_at=journal.started_at)
        except Exception as unusable:  # StoreError, or anything else: never hides the round's own error
            logger.warning("Round %s: its failure is not in the store (%s); the next round of %s records it from "
                           "the journal", info.round_id, one_line(str(unusable), 300), info.model)
        else:
            journal.finish()
    logger.error("Round %s failed during step %s: %s", info.round_id, step, error)
    if artifacts:
        _failure_artifact(info, step, error, logger)
    return error


def _failure_artifact(info: RoundInfo, step: str, error: str, logger: Any) -> None:
    """The round's Markdown artifact says it failed and why (under the round's own key), never hiding the error
    it reports when Prefect cannot take the artifact."""
    from prefect.artifacts import create_markdown_artifact

    from tasks.core.render import render_failed_round_markdown
    from tasks.ignore_list.publish import round_artifact_keys

    try:
        create_markdown_artifact(key=round_artifact_keys(info.model, partial=info.partial)[0],
                                 markdown=render_failed_round_markdown(info, step, error),
                                 description=f"Round {info.round_id}: failed")
    except Exception as exc:  # the round's own failure is what gets reported
        logger.warning("Round %s: its failure artifact was not created: %s", info.round_id, type(exc).__name__)


def report_journal_fault(cfg: CanaryConfig, journal: Any) -> None:
    """At the end of a round: a journal step that could not be written beside the database (tasks/spool/journal.py
    `Journal.fault`) is a loud failure even when the round saved: the direct alert, then SpoolError."""
    if journal.fault is None:
        return
    from tasks.alerts.store_alarm import alarm_unwritable_spool

    alarm_unwritable_spool(cfg.db_path, journal.fault, utcnow(), _run_logger())
    raise journal.fault


def publish(cfg: CanaryConfig, settled: Settlement, artifacts: bool = True) -> None:
    """The ignore list (JSON file + keyed artifact), the round's Markdown summary artifact and its events.
    `artifacts=False`: the JSON file only (the pipelined history runs with no Prefect API)."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    from tasks.core.canary_events import round_events
    from tasks.core.cost import round_cost
    from tasks.core.render import render_round_markdown
    from tasks.core.render.endpoint_table import endpoint_contract_rows
    from tasks.ignore_list.publish import create_ignore_artifact, publish_ignore_list, round_artifact_keys
    from tasks.orchestration.prefect_events import emit_canary_events

    publish_ignore_list(cfg, settled.ignore, artifact=False)
    if not artifacts:
        return
    info = settled.info
    round_key, table_key = round_artifact_keys(info.model, partial=info.partial)
    cost = round_cost(info.round_id, info.model, settled.attempts, settled.endpoints)
    md = render_round_markdown(info, settled.results, list(settled.decisions), settled.ignore,
                               list(settled.changes), cost, settled.endpoints)
    create_markdown_artifact(key=round_key, markdown=md, description=f"Round {info.round_id}")
    create_ignore_artifact(settled.ignore)
    create_table_artifact(key=table_key, table=endpoint_contract_rows(settled.results, settled.statuses),
                          description=f"Endpoints x contracts, round {info.round_id}")
    emit_canary_events(round_events(settled.decisions, [*settled.alerts, *settled.extra_alerts]), _run_logger())


def deliver(cfg: CanaryConfig, now: datetime) -> int:
    """Post the outbox to Slack (this round's alerts and any left by earlier rounds), no lock held, through the
    channel's paced loop (tasks/alerts/delivery_loop.py: in a cycle, the first round to get here posts for every round;
    the others hand their alerts over and go on)."""
    from tasks.alerts.delivery_loop import deliver_paced
    from tasks.alerts.slack_settings import SlackSettings

    summary = deliver_paced(cfg.db_path, SlackSettings.from_env(), now, _run_logger())
    return summary.sent


def refresh_snapshot(cfg: CanaryConfig) -> None:
    """Republish the analysts' snapshot once (a round, or a whole cycle): not once per write window."""
    from tasks import store

    try:
        with store.open_store(cfg.db_path, snapshot=True, lock_timeout_s=5.0):
            pass
    except StoreError as exc:  # the next cycle refreshes it
        _run_logger().warning("Analysts' snapshot not refreshed: %s", exc)


def ignore_in_force(cfg: CanaryConfig, model: str) -> list[str] | str:
    """The ignore list in force now (what a skipped round reports), or why it cannot be read."""
    from tasks import store
    from tasks.ignore_list.publish import current_ignore_list

    try:
        with store.open_store(cfg.db_path, read_only=True, lock_timeout_s=5.0) as con:
            return list(current_ignore_list(con, cfg, model, None, utcnow()).ignore)
    except StoreError as exc:
        return f"unknown ({exc})"


def _run_logger() -> Any:
    """The run logger (the Prefect UI shows it; alerts without Slack are read there), `log` outside a run."""
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return log
