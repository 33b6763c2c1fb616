"""The watcher wired to Prefect: live traffic and OpenRouter's own figures as suspicions, confirmed by pinned probes.

    canary serve / canary watch: a loop (tasks/watch/loop.py), every suspect_confirm_after_s / 3 s:
      per model: listing (one GET) -> watch_model (one write window: resolve, suspect, record)
                 -> a Scheduled run of the cycle deployment (`canary-cycle/canary-cycle`) probing the suspected
                    endpoints, due now -> `canary.endpoint.suspected` events

No flow run per look: a quiet look leaves no trace in Prefect; the confirmation rounds are the visible runs (named
`canary-confirm-<model>-<time>`, tag `suspicion`, parameters `model`, `only`, `contracts`, `confirms`, like the
rounds' own confirmations in tasks/round/confirmations.py), and each suspicion is a Prefect event.

A suspicion never decides anything (docs/design.md "Suspicion"): its confirmation round is an ordinary partial
`canary-round`, so two consecutive failing rounds, the floor, observe/enforce and the budget all hold; if it
fails, the round's own follow-up confirmation (`confirm_after_min`) brings the second round.

In process (tests, the benchmark), `watch_once(cfg, now)` looks once and returns each model's confirmation
request to the caller, which runs it with tasks/round/confirmations.py `run_confirmations` (on a StepClock).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.confirm import ConfirmationRequest
from tasks.orchestration.prefect_events import emit_canary_events
from tasks.watch.loop import Shard, WatchEngine, look_once, own_models_of, run_watcher, start_watcher

log = logging.getLogger("canary.watch")


def schedule_confirmation(cfg: CanaryConfig, request: ConfirmationRequest, *, deployment: str,
                          config_path: str | None, db_path: str | None = None) -> str:
    """A Scheduled run of `deployment` (the cycle) at `request.due` for the suspected endpoints; its flow run id.
    Idempotent per suspicion (`confirms`). `db_path`: a shard's file (the round lands in it)."""
    from prefect.deployments import run_deployment

    from tasks.core.plan import model_slug

    shard = {"db_path": db_path} if db_path else {}
    run = run_deployment(
        name=deployment, parameters={"config_path": config_path, **shard, **request.parameters()},
        scheduled_time=request.due, timeout=0, as_subflow=False,
        idempotency_key=f"confirm:{request.confirms}",
        flow_run_name=f"canary-confirm-{model_slug(request.model)}-{request.due:%Y-%m-%dT%H%M%S}",
        tags=["canary", "confirmation", "suspicion"],
    )
    return str(run.id)  # type: ignore[union-attr]


def watch_engine(cycle_deployment: str | None = None, config_path: str | None = None,
                 db_path: str | None = None) -> WatchEngine:
    """Served (`cycle_deployment` given): confirmation rounds are Scheduled runs of it (on `db_path`, a shard's
    file, when given). In process: the caller runs them. Suspicions go to Prefect's event feed wherever a Prefect
    API is configured."""
    start = partial(schedule_confirmation, deployment=cycle_deployment, config_path=config_path,
                    db_path=db_path) if cycle_deployment else None
    return WatchEngine(start_round=start, announce=emit_canary_events)


def shard_deployment(db_path: str) -> str:
    """The cycle deployment of the shard whose file is `db_path`: `canary-cycle/canary-cycle-<file stem>`, as
    docs/operations.md 2c names them (the name of its cycle slot; `canary-cycle/canary-cycle` for canary.duckdb)."""
    from flows.cycle import cycle_limit_name

    return f"canary-cycle/{cycle_limit_name(db_path)}"


def shards(dbs: Sequence[str], config_path: str | None, served: bool = True) -> list[Shard]:
    """The shards the watcher follows: each file with its cycle deployment (served) or none (in process)."""
    return [Shard(db, watch_engine(shard_deployment(db) if served else None, config_path, db)) for db in dbs]


def watch_once(cfg: CanaryConfig, now: datetime, cycle_deployment: str | None = None,
               config_path: str | None = None, dbs: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One look at every configured model (with `dbs`: at each shard's own models), without a flow run: per model
    its suspicions and the confirmation it asks for (parameters, `due`, and `flow_run_id` when served)."""
    if not dbs:
        return [look.as_dict() for look in look_once(watch_engine(cycle_deployment, config_path), cfg, now)]
    looks = []
    for shard in shards(dbs, config_path, served=cycle_deployment is not None):
        models = own_models_of(shard.db_path) if Path(shard.db_path).exists() else []
        shard_cfg = replace(cfg, db_path=shard.db_path, models=tuple(models))
        looks += [{**look.as_dict(), "db_path": shard.db_path} for look in look_once(shard.engine, shard_cfg, now)]
    return looks


def _loader(config_path: str | None) -> Any:
    from tasks.config.loading import resolve_config

    return partial(resolve_config, config_path)


def serve_watcher(config_path: str | None, cycle_deployment: str) -> tuple[threading.Thread, threading.Event]:
    """`canary serve`'s watcher: the loop in a daemon thread of the serving process."""
    logging.getLogger("canary.watch").setLevel(logging.INFO)  # its one-line states show beside Prefect's
    return start_watcher(watch_engine(cycle_deployment, config_path), _loader(config_path))


def run_served_watcher(config_path: str | None, cycle_deployment: str, stop: threading.Event | None = None,
                       dbs: Sequence[str] = ()) -> int:
    """`canary watch`: the loop in the foreground until stopped (Ctrl-C, SIGTERM); returns how many looks. With
    `dbs`, it follows those shards (each its own models and cycle deployment)."""
    logging.getLogger("canary.watch").setLevel(logging.INFO)
    return run_watcher(watch_engine(cycle_deployment, config_path), _loader(config_path),
                       stop=stop or threading.Event(), shards=shards(dbs, config_path))
