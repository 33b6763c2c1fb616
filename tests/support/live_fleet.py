"""A small fleet for the live-evidence tests: the simulator, N real routers in this process (each with its own
`events_db`, so the database path's records can be compared with Prometheus's), and traffic spread over them
that makes every kind of live count: attempts ok and failed (a masked upstream failure failed over), judged
tool calls held and broken, and an unpinned tier whose endpoint is known only by the provider it reported.

    with simulator_for_fleet() as sim, routers(sim, dirs) as running:
        traffic(running, rounds=4)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from provider_canary.router.route_events import flush_all
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import RunningRouter, start_router
from provider_canary.simulator.fleet import parse_fleet
from provider_canary.simulator.server import SimulatorHandle, start_simulator

MODEL = "acme/live-fleet-3.3"  # the dot: the model filter is a regular expression, escaped
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
           "required": ["city", "unit"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
FAULTS: dict[str, list[dict[str, Any]]] = {
    "alpha": [{"kind": "masked_upstream_failure", "native": "network_error"}],
    "beta": [],
    "gamma": [{"kind": "schema_violating_args"}],
    "delta": [],
}
#: route -> the tiers' provider preferences (one tier each): `any` pins no endpoint.
ROUTES: dict[str, list[dict[str, Any]]] = {
    "chat": [{"only": ["alpha"], "allow_fallbacks": False}, {"only": ["beta"], "allow_fallbacks": False}],
    "agent": [{"only": ["gamma"], "allow_fallbacks": False}, {"only": ["beta"], "allow_fallbacks": False}],
    "any": [{"order": ["delta", "beta"]}],
}


@contextmanager
def simulator_for_fleet() -> Iterator[SimulatorHandle]:
    supported = ["tools", "response_format", "max_tokens"]
    fleet = parse_fleet({"models": [{"id": MODEL, "endpoints": [
        {"tag": tag, "provider_name": tag.title(), "supported_parameters": supported, "faults": faults}
        for tag, faults in FAULTS.items()]}]})
    with start_simulator(fleet, time_scale=0.0) as sim:
        yield sim


def routes_for(sim_url: str, workdir: Path, **router: Any) -> dict[str, Any]:
    settings = {"events_path": str(workdir / "events.jsonl"), "savings_path": str(workdir / "savings.jsonl"),
                "publish_dir": str(workdir / "published"), "flush_interval_s": 3600, **router}
    return {"router": settings, "route": [
        {"model": name, "tier": [{"base_url": sim_url, "model": MODEL, "api_key_env": "SIM_KEY", "provider": p}
                                 for p in tiers]} for name, tiers in ROUTES.items()]}


@contextmanager
def routers(sim: SimulatorHandle, dirs: Sequence[Path], **router: Any) -> Iterator[list[RunningRouter]]:
    """One router per directory, each writing its live counts into `<dir>/events.duckdb`."""
    with ExitStack() as stack:
        running = []
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
            raw = routes_for(sim.base_url, d, events_db=str(d / "events.duckdb"), **router)
            running.append(stack.enter_context(start_router(parse_routes(raw), env={"SIM_KEY": sim.api_key})))
        yield running


def traffic(running: Sequence[RunningRouter], rounds: int) -> int:
    """`rounds` times, on each router in turn: a streamed chat, a non-streamed tool call and a chat on the
    unpinned route; the live counts flushed to each router's database. Returns the requests sent."""
    sent = 0
    with httpx.Client(timeout=30) as client:
        for _ in range(rounds):
            for r in running:
                url = r.base_url + "/chat/completions"
                with client.stream("POST", url, json={"model": "chat", "stream": True, "messages": [
                        {"role": "user", "content": "Hello"}]}) as reply:
                    reply.read()
                client.post(url, json={"model": "agent", "tools": TOOLS, "messages": [
                    {"role": "user", "content": "What is the weather in Lisbon today?"}]}).raise_for_status()
                client.post(url, json={"model": "any", "messages": [{"role": "user", "content": "Hi"}]}
                            ).raise_for_status()
                sent += 3
    for r in running:
        flush_all(r.shell.batchers)
    return sent
