"""Config overrides for real `canary-round` runs against the loopback simulator, everything under tmp."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from provider_canary.demo.simulator_process import SimulatorChild, simulator_process
from provider_canary.simulator.fleet import DEFAULT_FLEET_PATH, Fleet, parse_fleet
from provider_canary.simulator.server import SimulatorHandle
from tests.support import NO_EXCLUSIONS


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


#: A TTFT threshold for tests that judge other contracts: far above any first token a loaded machine delays
#: (healthy first tokens take milliseconds here), so their verdicts do not rest on a latency margin.
GENEROUS_TTFT_S = 20.0


def default_fleet_slow_start(delay_s: float = 60.0) -> dict[str, Any]:
    """The default fleet with its slow starter (lambda/fp8, 12 s) starting after `delay_s` simulated seconds
    instead: at time_scale 0.1 a 6 s first token, which fails a 3 s threshold however loaded the machine is
    (lateness only adds to it) while healthy endpoints (5 ms) keep a 3 s margin (a 1.2 s start against 1 s
    left them 1 s, and a load of 10 ate it)."""
    import tomllib

    spec = tomllib.loads(DEFAULT_FLEET_PATH.read_text(encoding="utf-8"))
    for model in spec["models"]:
        for endpoint in model["endpoints"]:
            for fault in endpoint.get("faults", []):
                if fault["kind"] == "slow_first_token":
                    fault["delay_s"] = delay_s
    return spec


#: The TTFT threshold that goes with `default_fleet_slow_start()` at time_scale 0.1.
SLOW_START_TTFT_S = 3.0


def round_overrides(sim: SimulatorHandle | SimulatorChild, tmp: Path, model: str, **extra: Any) -> dict[str, Any]:
    """The simulator as OpenRouter, a temp DuckDB/publish dir, no built-in exclusions, enforce mode;
    `extra` adds or replaces keys (e.g. ttft_s=1, languages=["en"])."""
    return {
        "base_url": sim.base_url,
        "db_path": str(tmp / "canary.duckdb"),
        "publish_dir": str(tmp / "published"),
        "exclusions_file": NO_EXCLUSIONS,
        "models": [model],
        "mode": "enforce",
        **extra,
    }


def hard_fault_fleet(model: str) -> Fleet:
    """Two healthy endpoints and `broken`, whose structured replies never parse (`invalid_json`: a hard failure
    every round, so two rounds suspend it and each asks for a confirmation)."""
    return parse_fleet({"models": [{"id": model, "endpoints": [
        {"tag": "alpha", "provider_name": "Alpha"},
        {"tag": "beta", "provider_name": "Beta"},
        {"tag": "broken", "provider_name": "Broken", "faults": [{"kind": "invalid_json"}]},
    ]}]})
