"""Router overhead vs streaming straight from the simulator (not a timed test; run it by hand).

    python benchmarks/bench_router.py [--requests 40] [--concurrency 8] [--streams 64] [--in-thread]

The router runs as its own process (`canary router`), as deployed; `--in-thread` runs it inside the
benchmark's process instead, where it shares one GIL with the client and the simulator.

Two phases in one run, each measuring the direct path and the proxied path interleaved, with the same
client code (httpx, SSE parsed line by line):

1. latency: sequential streams from a simulator with realistic delays (healthy ttft 50 ms, 5 ms between
   chunks, time_scale 1). TTFT = request sent -> first non-empty content delta. p50/p95 and the proxy's
   added milliseconds.
2. throughput: `--concurrency` parallel streams from a simulator with every delay at zero
   (time_scale 0), so the bound is CPU: aggregate content chunks/s and bytes/s, proxy / direct.

Everything runs on 127.0.0.1; on a shared 2-core machine expect noise of a few percent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from router.routes_loading import parse_routes  # noqa: E402
from router.server import start_router  # noqa: E402
from router.tokens import TOKENIZER  # noqa: E402
from simulator.fleet import parse_fleet  # noqa: E402
from simulator.server import start_simulator  # noqa: E402

MODEL = "acme/bench-1"
MESSAGES = [{"role": "user", "content": "Tell me about the harbour town, in detail."}]


@dataclass
class Run:
    ttft_s: float
    total_s: float
    chunks: int
    content_bytes: int


async def one_stream(client: httpx.AsyncClient, url: str, model: str, key: str, seed: int) -> Run:
    body = {"model": model, "messages": MESSAGES, "stream": True, "seed": seed}
    started = time.perf_counter()
    ttft = None
    chunks = size = 0
    headers = {"authorization": f"Bearer {key}"}
    async with client.stream("POST", url, json=body, headers=headers) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            doc = json.loads(line[6:])
            if "error" in doc:
                raise RuntimeError(f"stream error: {doc['error']}")
            text = (doc.get("choices") or [{}])[0].get("delta", {}).get("content") or ""
            if text:
                ttft = ttft if ttft is not None else time.perf_counter() - started
                chunks += 1
                size += len(text.encode())
    return Run(ttft or float("nan"), time.perf_counter() - started, chunks, size)


def fleet(delay: bool) -> Any:
    endpoint: dict[str, Any] = {"tag": "bench", "provider_name": "Bench"}
    if delay:
        endpoint |= {"ttft_s": 0.05, "chunk_interval_s": 0.005}
    return parse_fleet({"models": [{"id": MODEL, "endpoints": [endpoint]}]})


def routes_for(sim: Any, tmp: str) -> Any:
    return parse_routes(
        {
            "router": {
                "savers": [],
                "events_path": f"{tmp}/e.jsonl",
                "savings_path": f"{tmp}/s.jsonl",
                "publish_dir": f"{tmp}/published",
            },
            "route": [
                {
                    "model": "chat",
                    "tier": [{"base_url": sim.base_url, "model": MODEL, "api_key_env": "SIM_KEY"}],
                }
            ],
        }
    )


def pct(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]
    )


async def latency_phase(direct: tuple[str, str, str], proxy: tuple[str, str, str], n: int) -> None:
    runs: dict[str, list[Run]] = {"direct": [], "proxy": []}
    async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
        for i in range(n + 2):
            for name, (url, model, key) in (("direct", direct), ("proxy", proxy)):
                run = await one_stream(client, url, model, key, seed=i)
                if i >= 2:  # two warm-up rounds (connection set-up, imports)
                    runs[name].append(run)
    d = [r.ttft_s * 1000 for r in runs["direct"]]
    p = [r.ttft_s * 1000 for r in runs["proxy"]]
    dt = [r.chunks / (r.total_s - r.ttft_s) for r in runs["direct"]]
    pt = [r.chunks / (r.total_s - r.ttft_s) for r in runs["proxy"]]
    print(f"latency phase: {n} sequential streams per path, simulator time_scale 1 (ttft 50 ms, 5 ms/chunk)")
    print(
        f"  TTFT p50   direct {pct(d, 50):7.1f} ms   proxy {pct(p, 50):7.1f} ms   "
        f"ratio {pct(p, 50) / pct(d, 50):.3f}   added {pct(p, 50) - pct(d, 50):+.1f} ms"
    )
    print(
        f"  TTFT p95   direct {pct(d, 95):7.1f} ms   proxy {pct(p, 95):7.1f} ms   "
        f"ratio {pct(p, 95) / pct(d, 95):.3f}"
    )
    print(
        f"  per-stream chunks/s p50   direct {pct(dt, 50):7.1f}   proxy {pct(pt, 50):7.1f}   "
        f"ratio {pct(pt, 50) / pct(dt, 50):.3f}"
    )


async def throughput_phase(
    direct: tuple[str, str, str], proxy: tuple[str, str, str], concurrency: int, streams: int
) -> None:
    results: dict[str, tuple[float, int, int]] = {}
    async with httpx.AsyncClient(
        timeout=120, trust_env=False, limits=httpx.Limits(max_connections=concurrency * 2)
    ) as client:
        for name, (url, model, key) in (
            ("direct", direct),
            ("proxy", proxy),
            ("direct2", direct),
            ("proxy2", proxy),
        ):
            sem = asyncio.Semaphore(concurrency)

            async def bounded(
                i: int, url: str = url, model: str = model, key: str = key, sem: asyncio.Semaphore = sem
            ) -> Run:
                async with sem:
                    return await one_stream(client, url, model, key, seed=i)

            started = time.perf_counter()
            runs = await asyncio.gather(*(bounded(i) for i in range(streams)))
            elapsed = time.perf_counter() - started
            results[name] = (elapsed, sum(r.chunks for r in runs), sum(r.content_bytes for r in runs))
    print(f"throughput phase: {streams} streams per path, {concurrency} concurrent, simulator time_scale 0")
    rates = {}
    for path in ("direct", "proxy"):
        elapsed = results[path][0] + results[path + "2"][0]
        chunks = results[path][1] + results[path + "2"][1]
        size = results[path][2] + results[path + "2"][2]
        rates[path] = (chunks / elapsed, size / elapsed)
        print(
            f"  {path:6s} {chunks / elapsed:9.0f} content chunks/s   {size / elapsed / 1024:8.1f} KiB/s   "
            f"({2 * streams} streams in {elapsed:.2f} s)"
        )
    print(f"  ratio proxy/direct: chunks/s {rates['proxy'][0] / rates['direct'][0]:.3f}")


@contextmanager
def router_process(sim: Any, tmp: str) -> Iterator[str]:
    """The router as its own process (`canary router`), as deployed: it does not share the GIL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    routes = Path(tmp) / "routes.toml"
    routes.write_text(
        f'[router]\nsavers = []\nevents_path = "{tmp}/e.jsonl"\nsavings_path = "{tmp}/s.jsonl"\n'
        f'[[route]]\nmodel = "chat"\n[[route.tier]]\nbase_url = "{sim.base_url}"\nmodel = "{MODEL}"\n'
        'api_key_env = "SIM_KEY"\n'
    )
    code = "import typer; from cli.router_cmd import router_command; typer.run(router_command)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--routes", str(routes), "--port", str(port), "--log-level", "warning"],
        cwd=ROOT,
        env={**os.environ, "SIM_KEY": sim.api_key},
    )
    try:
        for _ in range(200):
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def router_thread(sim: Any, tmp: str) -> Iterator[str]:
    with start_router(routes_for(sim, tmp), env={"SIM_KEY": sim.api_key}) as router:
        yield router.base_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="sequential streams per path (latency)")
    parser.add_argument("--concurrency", type=int, default=8, help="parallel streams (throughput)")
    parser.add_argument("--streams", type=int, default=64, help="streams per path (throughput)")
    parser.add_argument(
        "--in-thread", action="store_true", help="run the router in this process (shares the GIL)"
    )
    args = parser.parse_args()
    runner = router_thread if args.in_thread else router_process
    print(f"router: {'in-process thread' if args.in_thread else 'separate process'}; tokenizer {TOKENIZER}")
    with TemporaryDirectory() as tmp:
        for delay in (True, False):
            with start_simulator(fleet(delay), time_scale=1.0 if delay else 0.0) as sim:
                with runner(sim, tmp) as router_url:
                    direct = (sim.base_url + "/chat/completions", MODEL, sim.api_key)
                    proxy = (router_url + "/chat/completions", "chat", "client")
                    if delay:
                        asyncio.run(latency_phase(direct, proxy, args.requests))
                    else:
                        asyncio.run(throughput_phase(direct, proxy, args.concurrency, args.streams))


if __name__ == "__main__":
    main()
