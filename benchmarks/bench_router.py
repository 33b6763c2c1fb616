"""Router overhead vs streaming straight from the simulator, and what judging costs (not a timed test; run it by hand).

    python benchmarks/bench_router.py [--requests 40] [--concurrency 8] [--streams 64] [--in-thread]
    python benchmarks/bench_router.py --judging-only [--rate 50] [--seconds 20]
    python benchmarks/bench_router.py --baseline-tree ../base [--rate 30] [--seconds 24] [--client]

The router runs as its own process (`canary router`), as deployed; `--in-thread` runs it inside the
benchmark's process instead, where it shares one GIL with the client and the simulator.

Two phases in one run, each measuring the direct path and the proxied path interleaved, with the same
client code (httpx, SSE parsed line by line):

1. latency: sequential streams from a simulator with realistic delays (healthy ttft 50 ms, 5 ms between
   chunks, time_scale 1). TTFT = request sent -> first non-empty content delta. p50/p95 and the proxy's
   added milliseconds.
2. throughput: `--concurrency` parallel streams from a simulator with every delay at zero
   (time_scale 0), so the bound is CPU: aggregate content chunks/s and bytes/s, proxy / direct.

3. judging: two router processes side by side on one simulator (time_scale 1: ttft 50 ms, 5 ms/chunk), one
   judging every answer (`judge = true`, the default) and one not (`judge = false`); each gets `--rate`
   streamed tool-call requests per second, open loop (sent on the clock, never waiting for the previous one),
   interleaved, for `--seconds`. Client first-chunk latency (sent -> first chunk carrying a tool call or text)
   p50/p99 for each, the difference and the ratio; each router's CPU (/proc, user+system) per request, and the
   difference per judged answer; and the judge alone in this process (fold the same streamed answer and check
   it against the request's tools: CPU per answer, `time.process_time`).

4. gateway (`--baseline-tree DIR`: a checkout of the previous main with its own `.venv`, `git worktree add DIR
   <commit>` and its `./scripts/setup`): this tree's router and the baseline tree's, each as its own process run
   by its own tree's Python, on one simulator, with the same routes file (this tree's defaults: the circuit
   breaker on, the tier key masked out of every relayed byte, every answer judged). Streamed tool-call requests
   open loop at `--rate`, alternating blocks; per router: CPU per request (/proc, user+system), client first-chunk
   p50/p99, and the ratio this/baseline against the 5 % allowance; and the masking's own cost per relayed event
   in this process. `--client` adds a `[[client]]` to this tree's routes and sends its key (the baseline ignores
   the header): it needs the client keys of issue 40 item 1.

Everything runs on 127.0.0.1; on a shared 2-core machine expect noise of a few percent: the load average is
printed beside every figure.
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

from provider_canary.router.answer import check, expectations, read_stream  # noqa: E402
from provider_canary.router.routes_loading import parse_routes  # noqa: E402
from provider_canary.router.server import start_router  # noqa: E402
from provider_canary.router.tokens import TOKENIZER  # noqa: E402
from provider_canary.simulator.fleet import parse_fleet  # noqa: E402
from provider_canary.simulator.server import start_simulator  # noqa: E402

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
def router_process(sim: Any, tmp: str, judge: bool = True, name: str = "routes") -> Iterator[str]:
    """The router as its own process (`canary router`), as deployed: it does not share the GIL."""
    with running_router(sim, tmp, judge, name) as (url, _):
        yield url


@contextmanager
def running_router(sim: Any, tmp: str, judge: bool, name: str, tree: Path = ROOT,
                   extra: str = "") -> Iterator[tuple[str, int]]:
    """(base URL, pid) of a router process judging (or not) every answer, run from `tree` by its own Python;
    `extra` is appended to its routes file."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    routes = Path(tmp) / f"{name}.toml"
    routes.write_text(
        f'[router]\nsavers = []\nevents_path = "{tmp}/{name}-e.jsonl"\nsavings_path = "{tmp}/{name}-s.jsonl"\n'
        f'judge = {"true" if judge else "false"}\n'
        f'[[route]]\nmodel = "chat"\n[[route.tier]]\nbase_url = "{sim.base_url}"\nmodel = "{MODEL}"\n'
        'api_key_env = "SIM_KEY"\n' + extra
    )
    # a baseline tree from before the one import package has its CLI at the top level
    cli = "provider_canary.cli" if (tree / "provider_canary" / "cli").is_dir() else "cli"
    code = f"import typer; from {cli}.router_cmd import router_command; typer.run(router_command)"
    python = sys.executable if tree == ROOT else str(tree / ".venv" / "bin" / "python")
    proc = subprocess.Popen(
        [python, "-c", code, "--routes", str(routes), "--port", str(port), "--log-level", "error"],
        cwd=tree,
        env={**os.environ, "SIM_KEY": sim.api_key, "PYTHONPATH": str(tree)},
    )
    try:
        for _ in range(200):
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1", proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# -- judging ----------------------------------------------------------------------------------------------------
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]},
                                            "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "unit"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                           "parameters": WEATHER}}]
ASK_TOOL = [{"role": "user", "content": "What is the weather in Lisbon for the next days?"}]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (/proc/<pid>/stat, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def tool_stream(client: httpx.AsyncClient, url: str, seed: int, key: str = "") -> float:
    """Seconds from sending to the first chunk carrying a tool call or text (the client's first chunk)."""
    body = {"model": "chat", "messages": ASK_TOOL, "tools": TOOLS, "stream": True, "seed": seed}
    started = time.perf_counter()
    first = float("nan")
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with client.stream("POST", url, json=body, headers=headers) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if first != first and line.startswith("data: ") and line != "data: [DONE]":
                delta = (json.loads(line[6:]).get("choices") or [{}])[0].get("delta") or {}
                if delta.get("tool_calls") or delta.get("content"):
                    first = time.perf_counter() - started
    return first


async def judging_load(url: str, rate: float, seconds: float, key: str = "") -> list[float]:
    """`rate` streamed tool-call requests per second to one router, open loop: each is sent on the clock,
    never waiting for the previous one. Returns each request's first-chunk latency (s)."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
    async with httpx.AsyncClient(timeout=60, trust_env=False, limits=limits) as client:
        async def one(seed: int) -> None:
            latencies.append(await tool_stream(client, url + "/chat/completions", seed, key))

        tasks = []
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
    return latencies


def judge_cpu_per_answer(sim: Any, n: int = 2000) -> float:
    """CPU ms to fold one streamed tool-call answer (as the simulator sends it) and check it, in this process."""
    body = {"model": MODEL, "messages": ASK_TOOL, "tools": TOOLS, "stream": True}
    raw = httpx.post(sim.base_url + "/chat/completions", json=body, timeout=30,
                     headers={"authorization": f"Bearer {sim.api_key}"}).content
    kept: dict[str, Any] = {}

    def intern(schema: Any) -> Any:
        return kept.setdefault(json.dumps(schema, sort_keys=True), schema)

    def once() -> tuple[Any, ...]:
        return check(read_stream(raw), expectations(TOOLS, None, intern))

    checks = once()
    assert any(str(v.quality) == "tools" and v.reason == "ok" for v in checks), checks
    started = time.process_time()
    for _ in range(n):
        once()
    return (time.process_time() - started) / n * 1000


def judging_phase(rate: float, seconds: float, tmp: str, blocks: int = 8) -> None:
    names = ("plain", "judged")
    lat: dict[str, list[float]] = {name: [] for name in names}
    cpu = dict.fromkeys(names, 0.0)
    with simulator_process(tmp) as sim:
        per_answer_ms = judge_cpu_per_answer(sim)
        with running_router(sim, tmp, False, "plain") as plain, running_router(sim, tmp, True, "judged") as judged:
            routers = {"plain": plain, "judged": judged}
            for url, _ in routers.values():
                asyncio.run(judging_load(url, rate, 1.0))  # warm up
            for _ in range(blocks):  # each router alone at `rate`, in alternating blocks: the same conditions
                for name, (url, pid) in routers.items():
                    before = cpu_seconds(pid)
                    lat[name] += asyncio.run(judging_load(url, rate, seconds / blocks))
                    time.sleep(0.3)  # the judge's queue drains: its CPU is counted in the block
                    cpu[name] += cpu_seconds(pid) - before
            health = httpx.get(judged[0].removesuffix("/v1") + "/healthz").json()["judge"]
    n = len(lat["plain"])
    p = {name: [x * 1000 for x in values] for name, values in lat.items()}
    print(f"judging phase: {rate:g} streamed tool-call requests/s, open loop, {seconds:g} s per router in {blocks} "
          f"alternating blocks ({n} requests each); simulator time_scale 1 (ttft 50 ms, 5 ms/chunk); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for q in (50, 99):
        a, b = pct(p["plain"], q), pct(p["judged"], q)
        print(f"  first chunk p{q}   no judge {a:7.2f} ms   judge {b:7.2f} ms   added {b - a:+6.2f} ms   "
              f"ratio {b / a:.3f}")
    per = {name: cpu[name] / n * 1000 for name in names}
    print(f"  router CPU per request   no judge {per['plain']:.3f} ms   judge {per['judged']:.3f} ms   "
          f"judging {per['judged'] - per['plain']:+.3f} ms per answer   ratio {per['judged'] / per['plain']:.3f}")
    print(f"  judge alone (this process): {per_answer_ms:.3f} ms CPU per streamed tool-call answer "
          "(fold + tools/empty/encoding checks)")
    print(f"  the judging router judged {health['judged']} answers, dropped {health['dropped']}, "
          f"errors {health['errors']}; its judge's own CPU (thread time around its work): "
          f"{health['cpu_ms_per_answer']:.3f} ms per answer")


@contextmanager
def router_thread(sim: Any, tmp: str) -> Iterator[str]:
    with start_router(routes_for(sim, tmp), env={"SIM_KEY": sim.api_key}) as router:
        yield router.base_url


@dataclass
class SimulatorProcess:
    base_url: str
    api_key: str


@contextmanager
def simulator_process(tmp: str) -> Iterator[SimulatorProcess]:
    """`canary simulator` as its own process (the judging load must not share the benchmark client's GIL)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    fleet = Path(tmp) / "fleet.toml"
    fleet.write_text(f'[[models]]\nid = "{MODEL}"\n[[models.endpoints]]\ntag = "bench"\nprovider_name = "Bench"\n'
                     'ttft_s = 0.05\nchunk_interval_s = 0.005\nsupported_parameters = ["tools", "max_tokens"]\n')
    proc = subprocess.Popen([str(Path(sys.executable).with_name("canary")), "simulator", "--port", str(port),
                             "--fleet", str(fleet)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        base = f"http://127.0.0.1:{port}/api/v1"
        for _ in range(300):
            try:
                httpx.get(base + "/models", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield SimulatorProcess(base, "sk-or-v1-simulator")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="sequential streams per path (latency)")
    parser.add_argument("--concurrency", type=int, default=8, help="parallel streams (throughput)")
    parser.add_argument("--streams", type=int, default=64, help="streams per path (throughput)")
    parser.add_argument(
        "--in-thread", action="store_true", help="run the router in this process (shares the GIL)"
    )
    parser.add_argument("--rate", type=float, default=50.0, help="requests/s to each router (judging)")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the judging load")
    parser.add_argument("--judging-only", action="store_true", help="run only the judging phase")
    parser.add_argument("--baseline-tree", type=Path, help="a checkout of the previous main with its own .venv: "
                        "run only the gateway phase against it")
    parser.add_argument("--client", action="store_true", help="gateway phase: a [[client]] in this tree's routes")
    args = parser.parse_args()
    if args.baseline_tree:
        from router_gateway import gateway_phase

        with TemporaryDirectory() as tmp:
            ok = gateway_phase(args.baseline_tree.resolve(), args.rate, args.seconds, tmp, args.client)
        raise SystemExit(0 if ok else 1)
    if args.judging_only:
        with TemporaryDirectory() as tmp:
            judging_phase(args.rate, args.seconds, tmp)
        return
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
        judging_phase(args.rate, args.seconds, tmp)


if __name__ == "__main__":
    main()
