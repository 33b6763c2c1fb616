"""The TTFT error floor: what the canary's probe worker measures against a simulator, beside a plain client.

    python benchmarks/ttft_floor.py --base-url URL --key KEY --fleet F.toml [--requests 300] [--threads 16]
        [--client worker,threads]
    python benchmarks/ttft_floor.py --fleet F.toml --requests 1024 --threads 256   # starts its own simulator

Sends `--requests` pinned streaming `ttft` requests (the canary's own body, from both clients), round-robin over the
fleet's healthy endpoints, `--threads` of them in flight at once, and prints one JSON line per client: the percentiles
(ms) of the first text's arrival minus the simulator's planned first-token delay, and the client's CPU seconds. The
clients:

* `worker`   the canary's own: tasks/probe/worker.py (one event loop in a child process), fed by the dispatcher
             with `--threads` as its `concurrency`, exactly as a cycle feeds it; its CPU is the worker process's;
* `threads`  a plain httpx client in `--threads` threads (one httpx.Client each): no Prefect, no judging, the
             floor a thread per request gives; its CPU is this process's.

bench_catalog.py runs it beside the canary: what the canary adds to the floor is its own measurement error; the
floor itself is the simulator's and the machine's. Each run starts with a few unmeasured requests (a fresh
simulator answers its first ones ~150 ms late).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_figures import cpu_seconds, percentile  # noqa: E402

from provider_canary.simulator.catalog import endpoint_role, planned_first_token_s  # noqa: E402
from provider_canary.simulator.fleet import EndpointSpec  # noqa: E402
from provider_canary.simulator.fleet_file import load_fleet  # noqa: E402

Job = tuple[str, EndpointSpec]


def ttft_body(model: str, tag: str) -> dict[str, Any]:
    """The canary's own `ttft` probe body (tasks/core/probe_request.py): both clients ask the simulator the same."""
    from tasks.config import CanaryConfig
    from tasks.core.probe_request import build_request
    from tasks.core.types import Contract

    return build_request(Contract.TTFT, model, tag, None, CanaryConfig())


def first_text_s(client: httpx.Client, url: str, key: str, model: str, tag: str) -> float | None:
    body = ttft_body(model, tag)
    t0 = time.monotonic()
    first = None
    with client.stream("POST", url, json=body, headers={"Authorization": f"Bearer {key}"}) as response:
        for line in response.iter_lines():
            if first is None and line.startswith("data: {"):
                if json.loads(line[6:])["choices"][0]["delta"].get("content"):
                    first = time.monotonic() - t0
    return first


def figures(errors: list[float], jobs: int, cpu_s: float, wall_s: float, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {f"p{q}": percentile(errors, q) for q in (50, 95, 99)}
    out.update(n=len(errors), max=max(errors, default=None), missing=jobs - len(errors), cpu_s=cpu_s,
               cpu_ms_per_request=cpu_s * 1000 / jobs if jobs else None, wall_s=wall_s, **extra)
    return out


def threaded(url: str, key: str, jobs: list[Job], threads: int) -> dict[str, Any]:
    """The plain client: `threads` threads, one httpx.Client each."""
    local = threading.local()

    def one(job: Job) -> float | None:
        model, ep = job
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=60)
        got = first_text_s(local.client, url, key, model, ep.tag)
        return None if got is None else (got - planned_first_token_s(ep)) * 1000

    usage0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(one, jobs))
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    return figures([r for r in results if r is not None], len(jobs), cpu, time.monotonic() - t0,
                   client="threads", threads=threads)


def canary_worker(base_url: str, key: str, jobs: list[Job], in_flight: int) -> dict[str, Any]:
    """The canary's probe worker, fed through its dispatcher with `concurrency = in_flight`."""
    from tasks.config import CanaryConfig
    from tasks.core.types import Contract, Endpoint
    from tasks.probe import loop as probe_loop
    from tasks.probe import worker as probe_worker

    os.environ[probe_worker.ENV] = "1"
    cfg = CanaryConfig(base_url=base_url, concurrency=in_flight, probe_budget_s=60.0, read_timeout_s=30.0)

    def call(job: Job, n: int) -> probe_loop.ProbeCall:
        model, ep = job
        endpoint = Endpoint(model=model, tag=ep.tag, provider_name=ep.provider_name)
        return probe_loop.ProbeCall(base_url=base_url, endpoint=endpoint, contract=Contract.TTFT, round_id="floor",
                                      attempt_no=n, language="en", cfg=cfg, api_key=key,
                                      body=ttft_body(model, ep.tag))

    probe_worker.start()
    pid = probe_worker.worker().proc.pid
    for i in range(4):  # unmeasured: the worker's imports and first connections
        probe_worker.dispatcher().submit(call(jobs[i % len(jobs)], 0)).result()
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    futures = [(job, probe_worker.dispatcher().submit(call(job, i + 1))) for i, job in enumerate(jobs)]
    errors = []
    for (_model, ep), future in futures:
        attempt = future.result()
        if attempt.ttft_ms is not None:
            errors.append(attempt.ttft_ms - planned_first_token_s(ep) * 1000)
    return figures(errors, len(jobs), cpu_seconds(pid) - cpu0, time.monotonic() - t0, client="worker",
                   in_flight=in_flight)


@contextmanager
def own_simulator(fleet: Path) -> Any:
    """A simulator in a child process (in this one it would share the GIL with the threaded client)."""
    from provider_canary.demo.simulator_process import simulator_process

    with simulator_process(fleet, time_scale=1.0) as sim:
        yield sim.base_url, sim.api_key


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", help="a running simulator (default: start one in a child process)")
    ap.add_argument("--key")
    ap.add_argument("--fleet", type=Path, required=True)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--threads", type=int, default=16, help="requests in flight (threads of the plain client)")
    ap.add_argument("--client", default="worker,threads", help="worker, threads, or both (comma-separated)")
    args = ap.parse_args()
    fleet = load_fleet(args.fleet)
    healthy = [(m.id, e) for m in fleet.models for e in m.endpoints if endpoint_role(e) == "healthy"]
    jobs = [healthy[i % len(healthy)] for i in range(args.requests)]
    with (own_simulator(args.fleet) if args.base_url is None else _given(args.base_url, args.key)) as (base, key):
        url = base.rstrip("/") + "/chat/completions"
        with httpx.Client(timeout=30) as client:  # a fresh simulator's first replies are late
            for model, ep in healthy[:4]:
                first_text_s(client, url, key, model, ep.tag)
        for name in args.client.split(","):
            if name.strip() == "worker":
                print(json.dumps(canary_worker(base, key, jobs, args.threads)), flush=True)
            elif name.strip() == "threads":
                print(json.dumps(threaded(url, key, jobs, args.threads)), flush=True)


@contextmanager
def _given(base_url: str, key: str | None) -> Any:
    yield base_url, key or ""


if __name__ == "__main__":
    main()
