"""What the router's door costs per request (provider_canary/router/access.py, provider_canary/router/clients.py): not a
timed test; run it by hand.

    python benchmarks/bench_router_access.py [--requests 20000] [--clients 1,10,100]

In one process, no network: CPU per call (`time.process_time`, best of 5 runs) of
1. `identify` (hash the presented key, compare its digest with every client's: constant time) for N clients;
2. `take` (a client's token bucket);
3. the whole door as ASGI middleware around an app that answers 200 at once, against the same app called
   directly (the difference is what auth, the rate limit, the per-client counter and the in-flight gauge add to
   each `/v1/*` request), with and without clients.
Prints `cat /proc/loadavg` beside the figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provider_canary.router.access import Door  # noqa: E402
from provider_canary.router.clients import identify, key_sha256, take  # noqa: E402
from provider_canary.router.metrics import RouterMetrics  # noqa: E402
from provider_canary.router.routes import Client  # noqa: E402
from tasks.runtime.clock import SystemClock  # noqa: E402


def best_us(fn: Callable[[], None], n: int, runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, time.process_time() - start)
    return best / n * 1e6


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def door_us(app: Any, key: str, n: int) -> float:
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
             "headers": [(b"authorization", f"Bearer {key}".encode())], "client": ("127.0.0.1", 1)}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        pass

    async def many() -> float:
        best = float("inf")
        for _ in range(5):
            start = time.process_time()
            for _ in range(n):
                await app(dict(scope), receive, send)
            best = min(best, time.process_time() - start)
        return best / n * 1e6

    return asyncio.run(many())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--clients", default="1,10,100")
    args = ap.parse_args()
    n = args.requests
    print(f"load: {Path('/proc/loadavg').read_text().strip()}")
    for count in (int(c) for c in args.clients.split(",")):
        callers = [Client(f"c{i}", key_sha256(f"sk-canary-key-{i}"), 600) for i in range(count)]
        header = f"Bearer sk-canary-key-{count - 1}"
        cost = best_us(lambda c=callers, h=header: identify(c, h), n)  # type: ignore[misc]
        print(f"identify, {count:>3} clients: {cost:6.2f} us per request")
    state: dict[str, Any] = {"b": None, "t": 0.0}

    def one_take() -> None:
        state["t"] += 0.001
        state["b"], _ = take(state["b"], 600, state["t"])

    print(f"take (token bucket): {best_us(one_take, n):6.2f} us per request")
    direct = door_us(_ok, "x", n)
    print(f"the app alone (ASGI call): {direct:6.2f} us per request")
    for count in (0, 10):
        callers = [Client(f"c{i}", key_sha256(f"sk-canary-key-{i}"), 10**6) for i in range(count)]
        door = Door(_ok, callers=callers, required=bool(callers), clock=SystemClock(), metrics=RouterMetrics())
        with_door = door_us(door, "sk-canary-key-0", n)
        print(f"through the door, {count:>2} clients{' (anonymous)' if not count else ''}: {with_door:6.2f} us per "
              f"request, +{with_door - direct:.2f} us")
    print(f"load: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
