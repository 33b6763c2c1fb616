"""Config overrides for real `canary-round` runs against the loopback simulator, everything under tmp."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from flows.history_sim import SimulatorChild, simulator_process
from simulator.fleet import DEFAULT_FLEET_PATH
from simulator.server import SimulatorHandle


def child_simulator(
    fleet: Path | Mapping[str, Any] = DEFAULT_FLEET_PATH, time_scale: float = 0.1
) -> Callable[..., Iterator[SimulatorChild]]:
    """A module-scoped `sim` fixture: the simulator in a child process (`sim = child_simulator(FLEET)`).

    In the test's own process the simulator would share the GIL with the rounds' Prefect threads, and healthy
    first tokens came late enough on a loaded machine to fail TTFT."""

    @pytest.fixture(scope="module", name="sim")
    def sim() -> Iterator[SimulatorChild]:
        with simulator_process(fleet, time_scale=time_scale) as handle:
            yield handle

    return sim


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
