"""The demo's settings: its model, its positive control, its time scale and its quiet console."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DEMO_MODEL = "meta-llama/llama-3.3-70b-instruct"
#: Who the demo's own changes are recorded as (its mode setting), so that they are never taken for an operator's.
DEMO_WHO = "canary demo"
#: Simulated delays and the round's time budgets are multiplied by this in `canary demo` (rounds of seconds).
DEMO_TIME_SCALE = 0.125
DEFAULT_FLEET = Path(__file__).resolve().parents[1] / "simulator" / "fleets" / "default.toml"
#: The default fleet's positive control for the refusal probe (it always filters the roleplay).
DEMO_CONTROLS = ["amazon-bedrock"]


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """Only errors on the console while the demo prints its own tables; levels are restored after."""
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
    loggers = [logging.getLogger(n) for n in ("prefect", "httpx", "uvicorn", "canary")]
    before = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, before, strict=True):
            lg.setLevel(level)




def scaled_timing(time_scale: float) -> dict[str, float]:
    """The round's time budgets scaled like the simulator's delays (the defaults: 10 s TTFT threshold, 30 s
    read timeout, 60 s probe budget), with floors under which loopback scheduling noise would decide."""
    return {
        "ttft_s": round(10.0 * time_scale, 4),
        "read_timeout_s": max(30.0 * time_scale, 2.0),
        "probe_budget_s": max(60.0 * time_scale, 5.0),
        "connect_timeout_s": 5.0,
    }


def demo_overrides(base_url: str, db_path: str, publish_dir: str,
                   time_scale: float = DEMO_TIME_SCALE) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "db_path": db_path,
        "publish_dir": publish_dir,
        "mode": "enforce",
        "refusal_controls": DEMO_CONTROLS,
        "models": [DEMO_MODEL],
        **scaled_timing(time_scale),
    }
