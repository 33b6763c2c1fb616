"""`canary serve`: the `canary-round` deployment on its schedule, one schedule per configured model.

prefect.yaml holds the same deployment for `prefect deploy` (a work pool + worker). Serving needs a real
Prefect API (`prefect server start`, PREFECT_API_URL): a temporary server never fires schedules.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from tasks.config import CanaryConfig, load_config
from tasks.plan import model_slug


def build_deployment(cfg: CanaryConfig, config_path: str | None, *, interval: timedelta | None = None) -> Any:
    from prefect.schedules import Interval

    from flows.round import canary_round

    every = interval or timedelta(minutes=cfg.interval_min)
    schedules = [
        Interval(every, parameters={"model": m, "config_path": config_path}, slug=model_slug(m))
        for m in cfg.models
    ]
    return canary_round.to_deployment(
        name="canary-round",
        schedules=schedules,
        description="Probe every endpoint of each model pinned, judge the contracts, quarantine, publish.",
        tags=["canary"],
    )


def serve_deployment(config: Path | None, *, interval: timedelta | None = None) -> None:
    from prefect import serve

    from flows.deadman import deadman_deployment
    from tasks.errors import ConfigError

    cfg = load_config(config)
    if not os.environ.get("PREFECT_API_URL"):
        raise ConfigError(
            "serve needs a Prefect server: run `prefect server start --host 127.0.0.1` and "
            "export PREFECT_API_URL=http://127.0.0.1:4200/api"
        )
    cfg_path = str(config) if config else None
    serve(build_deployment(cfg, cfg_path, interval=interval), deadman_deployment(cfg_path))
