"""The gateway phase of benchmarks/bench_router.py (`--baseline-tree DIR`): this tree's router against the previous
main's, as separate processes on one simulator, with the same routes and load (the module docstring there says
what is measured). Run through bench_router.py, whose helpers it uses.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import bench_router as bench
import httpx

#: The allowance: this tree may be no more than this much worse than the baseline, in CPU and first-chunk p99.
ALLOWANCE = 1.05


def masking_us_per_event(sim: Any, n: int = 20000) -> float:
    """Microseconds of CPU the tier-key mask takes per streamed event the simulator sends (this process)."""
    from provider_canary.router.masking import RelayMask

    body = {"model": bench.MODEL, "messages": bench.ASK_TOOL, "tools": bench.TOOLS, "stream": True}
    raw = httpx.post(sim.base_url + "/chat/completions", json=body, timeout=30,
                     headers={"authorization": f"Bearer {sim.api_key}"}).content
    events = [e + b"\n\n" for e in raw.split(b"\n\n") if e]
    mask = RelayMask([sim.api_key])
    started = time.process_time()
    for _ in range(n // len(events) + 1):
        for event in events:
            mask(event)
    return (time.process_time() - started) / ((n // len(events) + 1) * len(events)) * 1e6


def gateway_phase(baseline: Path, rate: float, seconds: float, tmp: str, client: bool, blocks: int = 8) -> bool:
    """This tree's router against the baseline tree's, same routes, same load; True when within ALLOWANCE."""
    names = ("baseline", "this")
    lat: dict[str, list[float]] = {name: [] for name in names}
    cpu = dict.fromkeys(names, 0.0)
    key = "sk-bench-client-" + "0" * 24 if client else ""
    extra = (f'[[client]]\nname = "bench"\nkey_sha256 = "{hashlib.sha256(key.encode()).hexdigest()}"\n'
             if client else "")
    loads: list[float] = []
    with bench.simulator_process(tmp) as sim:
        mask_us = masking_us_per_event(sim)
        with bench.running_router(sim, tmp, True, "baseline", tree=baseline) as base, \
                bench.running_router(sim, tmp, True, "this", extra=extra) as this:
            routers = {"baseline": base, "this": this}
            for url, _ in routers.values():
                asyncio.run(bench.judging_load(url, rate, 1.0, key))  # warm up
            for block in range(blocks):  # each goes first in every other block: no order bias
                for name in (names if block % 2 == 0 else names[::-1]):
                    url, pid = routers[name]
                    before = bench.cpu_seconds(pid)
                    lat[name] += asyncio.run(bench.judging_load(url, rate, seconds / blocks, key))
                    time.sleep(0.3)  # the judge's queue drains: its CPU is counted in the block
                    cpu[name] += bench.cpu_seconds(pid) - before
                    loads.append(os.getloadavg()[0])
    n = len(lat["this"])
    per = {name: cpu[name] / n * 1000 for name in names}
    p = {name: [x * 1000 for x in values] for name, values in lat.items()}
    print(f"gateway phase: this tree (breaker on, tier key masked, judged{', a [[client]]' if client else ''}) "
          f"against {baseline}; {rate:g} streamed tool-call requests/s, open loop, {seconds:g} s per router in "
          f"{blocks} alternating blocks ({n} requests each); load average {min(loads):.1f}-{max(loads):.1f} "
          f"on {os.cpu_count()} CPUs")
    ratios = {"cpu": per["this"] / per["baseline"]}
    print(f"  router CPU per request   baseline {per['baseline']:.3f} ms   this {per['this']:.3f} ms   "
          f"ratio {ratios['cpu']:.3f}")
    for q in (50, 99):
        a, b = bench.pct(p["baseline"], q), bench.pct(p["this"], q)
        ratios[f"p{q}"] = b / a
        print(f"  first chunk p{q}   baseline {a:7.2f} ms   this {b:7.2f} ms   added {b - a:+6.2f} ms   "
              f"ratio {b / a:.3f}")
    print(f"  tier-key mask alone (this process): {mask_us:.2f} us CPU per relayed event")
    ok = ratios["cpu"] <= ALLOWANCE and ratios["p99"] <= ALLOWANCE
    print(f"  within {ALLOWANCE - 1:.0%} of the baseline (CPU and p99): {'yes' if ok else 'NO'}")
    return ok
