"""The TTFT error floor: what a plain httpx client (no Prefect, no judging) measures against a simulator.

    python benchmarks/ttft_floor.py --base-url URL --key KEY --fleet F.toml [--requests 300] [--threads 16]

Sends `--requests` pinned streaming requests, round-robin over the fleet's healthy endpoints, from `--threads`
threads (one httpx.Client each), and prints one JSON line: the percentiles (ms) of the first text's arrival
minus the simulator's planned first-token delay. bench_catalog.py runs it beside the canary: what the canary
adds to this floor is its own measurement error; the floor itself is the simulator's and the machine's.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_figures import percentile  # noqa: E402

from simulator.catalog import endpoint_role, planned_first_token_s  # noqa: E402
from simulator.fleet import EndpointSpec  # noqa: E402
from simulator.fleet_file import load_fleet  # noqa: E402

PROMPT = "Continue the scene at the inn, please. She is waiting for you by the fire."


def first_text_s(client: httpx.Client, url: str, key: str, model: str, tag: str) -> float | None:
    body = {
        "model": model,
        "stream": True,
        "max_tokens": 400,
        "messages": [{"role": "user", "content": PROMPT}],
        "provider": {"only": [tag], "allow_fallbacks": False},
    }
    t0 = time.monotonic()
    first = None
    with client.stream("POST", url, json=body, headers={"Authorization": f"Bearer {key}"}) as response:
        for line in response.iter_lines():
            if first is None and line.startswith("data: {"):
                if json.loads(line[6:])["choices"][0]["delta"].get("content"):
                    first = time.monotonic() - t0
    return first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--fleet", type=Path, required=True)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--threads", type=int, default=16)
    args = ap.parse_args()
    fleet = load_fleet(args.fleet)
    healthy = [(m.id, e) for m in fleet.models for e in m.endpoints if endpoint_role(e) == "healthy"]
    jobs = [healthy[i % len(healthy)] for i in range(args.requests)]
    url = args.base_url.rstrip("/") + "/chat/completions"
    local = threading.local()

    def one(job: tuple[str, EndpointSpec]) -> float | None:
        model, ep = job
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=30)
        got = first_text_s(local.client, url, args.key, model, ep.tag)
        return None if got is None else (got - planned_first_token_s(ep)) * 1000

    with ThreadPoolExecutor(args.threads) as pool:
        results = list(pool.map(one, jobs))
    errors = [r for r in results if r is not None]
    out = {f"p{q}": percentile(errors, q) for q in (50, 95, 99)}
    out.update(n=len(errors), max=max(errors, default=None), threads=args.threads)
    out["missing"] = len(jobs) - len(errors)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
