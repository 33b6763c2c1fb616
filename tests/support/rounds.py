"""Config overrides for real `canary-round` runs against the loopback simulator, everything under tmp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flows.history_sim import SimulatorChild
from simulator.server import SimulatorHandle


def round_overrides(sim: SimulatorHandle | SimulatorChild, tmp: Path, model: str, **extra: Any) -> dict[str, Any]:
    """The simulator as OpenRouter, a temp DuckDB/publish dir, no built-in exclusions, enforce mode;
    `extra` adds or replaces keys (e.g. ttft_s=1, languages=["en"])."""
    return {
        "base_url": sim.base_url,
        "db_path": str(tmp / "canary.duckdb"),
        "publish_dir": str(tmp / "published"),
        "exclusions_file": str(tmp / "no-exclusions.toml"),
        "models": [model],
        "mode": "enforce",
        **extra,
    }
