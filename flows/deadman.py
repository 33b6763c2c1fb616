"""The `canary-deadman` flow: tell admins when no round of a model has completed for two intervals.

A round that crashes is never judged and a schedule that stopped firing runs nothing, so silence is what a
broken canary looks like. Two watchers notice it, and both queue the same alert key
(`deadman|<model>|<last complete round>`), so one silence episode is announced once, whoever sees it first:

* this flow, served next to the rounds by `canary serve` (every 15 minutes), during the silence;
* the next round that completes after it (its settlement carries the alert: tasks/core/settle.py), for
  setups that run only the round deployment.

Both run inside the canary. When the canary itself is gone (serve stopped or killed, its worker down, the schedule
stopped), Prefect's server tells Slack on its own: the dead-man automation of tasks/orchestration/deadman_automation.py.

Alerts go through the outbox like every other alert (written to DuckDB first, then flushed), so a Slack
outage delays them and never loses or repeats one. A model that never completed a round is watched from the
first check that saw it (remembered in the `settings` table).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from tasks.config import CanaryConfig
from tasks.core.render import silence_alerts
from tasks.runtime.clock import utcnow
from tasks.runtime.secrets import install_redaction
from tasks.store.history import last_complete_ts

#: How often `canary serve` runs the check. Silence is two round intervals, so 15 min is early enough.
CHECK_EVERY = timedelta(minutes=15)
_WATCH_KEY = "deadman_watching_since:{model}"


def _watching_since(con: Any, model: str, now: datetime) -> datetime:
    from tasks import store

    key = _WATCH_KEY.format(model=model)
    value = store.get_setting(con, key)
    if value is None:
        store.set_setting(con, key, now.isoformat(), at=now, who="canary-deadman")
        return now
    return datetime.fromisoformat(value)


def _interval(cfg: CanaryConfig) -> timedelta:
    return timedelta(minutes=cfg.interval_min)


@task(name="deadman-check", cache_policy=NO_CACHE)
def deadman_check(cfg: CanaryConfig, now: datetime) -> dict[str, Any]:
    """Queue an alert per silent model, then deliver the outbox (queued alerts of crashed rounds included)
    with the database closed."""
    from tasks.alerts.slack_settings import SlackSettings
    from tasks.alerts.store_alarm import alarm_unreadable_store
    from tasks.errors import StoreError

    logger = get_run_logger()
    settings = SlackSettings.from_env()
    try:
        return _check(cfg, now, settings, logger)
    except StoreError as exc:  # the dead-man must speak even when the database cannot
        if exc.busy:
            raise
        return {"overdue": [], "queued": 0, "sent": int(alarm_unreadable_store(cfg.db_path, exc, now, logger)),
                "failed": 0, "store_unreadable": str(exc)}


def _check(cfg: CanaryConfig, now: datetime, settings: Any, logger: Any) -> dict[str, Any]:
    from tasks import store
    from tasks.alerts.delivery_loop import deliver_paced
    from tasks.alerts.links import round_links
    from tasks.core.canary_events import alert_events
    from tasks.core.render.links import with_links
    from tasks.ignore_list.publish import current_ignore_list
    from tasks.orchestration.prefect_events import emit_canary_events

    with store.open_store(cfg.db_path) as con:
        last = {m: last_complete_ts(con, m) for m in cfg.models}
        watching = {m: _watching_since(con, m, now) for m in cfg.models if last[m] is None}
        ignore = {m: current_ignore_list(con, cfg, m, None, now) for m in cfg.models}
        alerts = [with_links(a, round_links(cfg)) for a in
                  silence_alerts(last, now, _interval(cfg), watching_since=watching, ignore_lists=ignore)]
        queued = store.enqueue_alerts(con, alerts)
    emit_canary_events(alert_events(alerts), logger)  # after the outbox has them
    summary = deliver_paced(cfg.db_path, settings, now, logger)
    for a in alerts:
        logger.warning("No complete round of %s for more than two intervals (alert %s)", a.model, a.key)
    return {
        "overdue": [a.model for a in alerts],
        "queued": queued,
        "sent": summary.sent,
        "failed": summary.failed,
    }


def _flow_run_name() -> str:
    from prefect.runtime import flow_run

    ts = (flow_run.parameters or {}).get("now")
    return f"canary-deadman-{(ts if isinstance(ts, datetime) else utcnow()).strftime('%Y-%m-%dT%H%M')}"


@flow(name="canary-deadman", flow_run_name=_flow_run_name)
def canary_deadman(
    config_path: str | None = None,
    db_path: str | None = None,
    now: datetime | None = None,
    overrides: dict[str, Any] | None = None,
    models: list[str] | None = None,
) -> dict[str, Any]:
    """Alert once per silence episode for every configured model (a shard: its `models`) without a recent
    complete round."""
    install_redaction()  # the entry point of a deployment's process: hooks before any log
    from tasks.config.loading import resolve_config

    cfg = resolve_config(config_path, {**(overrides or {}), **({"models": models} if models else {})},
                         db_path=db_path)
    return deadman_check(cfg, now or utcnow())


def deadman_deployment(config_path: str | None, *, interval: timedelta = CHECK_EVERY) -> Any:
    """The `canary-deadman` deployment `canary serve` serves next to `canary-round`."""
    from tasks.orchestration.deployments import CHECK_CONCURRENCY, concurrency, every

    return canary_deadman.to_deployment(
        name="canary-deadman",
        schedules=[every(interval, slug="deadman")],
        concurrency_limit=concurrency(*CHECK_CONCURRENCY),
        parameters={"config_path": config_path},
        description="Tell admins when no round of a model has completed for two intervals.",
        tags=["canary"],
    )
