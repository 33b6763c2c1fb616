"""Profile of a cycle's round starts: which Prefect API calls and steps a round makes before its first probe, and
how long each takes (issue 45). In-process, the way `canary run` runs (private Prefect server, or PREFECT_API_URL):

    .venv/bin/python benchmarks/profile_round_start.py --models 40            # 40 x 15, models_in_flight 32
    .venv/bin/python benchmarks/profile_round_start.py --models 40 --json out.json

Every httpx request of the process is timed (thread, method, route with ids folded, status), and so are the
round's steps (admission by the cycle's pool, the flow function entered, the slot, load-prior, discovery, the
first probe handed to the probe worker). It prints, per round, the time from admission to the first probe and
where it went, and the API calls of a round's start grouped by route (count, total and median ms).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_LOCK = threading.Lock()
CALLS: list[dict[str, Any]] = []  # every httpx request: thread, route, t0, t1, status
MARKS: list[tuple[str, str, float, float]] = []  # (thread, what, t0, t1)


def _route(request: Any) -> str:
    path = _ID.sub("{id}", request.url.path)
    return f"{request.method} {path.split('/api', 1)[-1] if '/api/' in path else path}"


def _record(request: Any, t0: float, status: int | None) -> None:
    with _LOCK:
        CALLS.append({"thread": threading.current_thread().name, "route": _route(request), "t0": t0,
                      "t1": time.monotonic(), "status": status})


def patch_httpx() -> None:
    import httpx

    sync_send, async_send = httpx.Client.send, httpx.AsyncClient.send

    def send(self: Any, request: Any, **kw: Any) -> Any:
        t0 = time.monotonic()
        status = None
        try:
            response = sync_send(self, request, **kw)
            status = response.status_code
            return response
        finally:
            _record(request, t0, status)

    async def asend(self: Any, request: Any, **kw: Any) -> Any:
        t0 = time.monotonic()
        status = None
        try:
            response = await async_send(self, request, **kw)
            status = response.status_code
            return response
        finally:
            _record(request, t0, status)

    httpx.Client.send = send  # type: ignore[method-assign]
    httpx.AsyncClient.send = asend  # type: ignore[method-assign]


def timed(owner: Any, name: str, what: str | None = None) -> None:
    """Wrap `owner.name` (a function or a context manager factory) so each call is a mark of its thread."""
    original = getattr(owner, name)
    label = what or name

    def mark(t0: float) -> None:
        with _LOCK:
            MARKS.append((threading.current_thread().name, label, t0, time.monotonic()))

    def wrapper(*args: Any, **kw: Any) -> Any:
        t0 = time.monotonic()
        try:
            return original(*args, **kw)
        finally:
            mark(t0)

    setattr(owner, name, wrapper)


def timed_cm(owner: Any, name: str, what: str) -> None:
    """Wrap a context manager factory: the mark covers its entry only (acquiring), not its body."""
    import contextlib

    original = getattr(owner, name)

    @contextlib.contextmanager
    def wrapper(*args: Any, **kw: Any) -> Any:
        t0 = time.monotonic()
        with original(*args, **kw) as value:
            t1 = time.monotonic()
            with _LOCK:
                MARKS.append((threading.current_thread().name, what, t0, t1))
            try:
                yield value
            finally:
                with _LOCK:
                    MARKS.append((threading.current_thread().name, what + " held", t1, time.monotonic()))

    setattr(owner, name, wrapper)


def instrument() -> None:
    """Marks on the round's path (whatever the tree's code calls them; missing names are skipped)."""
    import flows.round
    import tasks.round.steps as steps
    from tasks.probe import worker as probe_worker

    flow = flows.round.canary_round
    original_fn = flow.fn

    def fn(*args: Any, **kw: Any) -> Any:
        with _LOCK:
            MARKS.append((threading.current_thread().name, "flow function entered", time.monotonic(), 0.0))
        return original_fn(*args, **kw)

    flow.fn = fn  # the engine calls the flow's function after its run is created and Running

    import concurrent.futures

    pool_submit = concurrent.futures.ThreadPoolExecutor.submit

    def submit(self: Any, fn: Any, /, *args: Any, **kw: Any) -> Any:
        if not getattr(self, "_thread_name_prefix", "").startswith("round"):
            return pool_submit(self, fn, *args, **kw)

        def admitted(*a: Any, **k: Any) -> Any:  # the cycle's pool runs a round: its admission
            t0 = time.monotonic()
            try:
                return fn(*a, **k)
            finally:
                with _LOCK:
                    MARKS.append((threading.current_thread().name, "round (admission to end)", t0,
                                  time.monotonic()))

        return pool_submit(self, admitted, *args, **kw)

    concurrent.futures.ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]
    for name in ("load_prior", "discover"):
        if hasattr(steps, name):
            timed(steps, name)
    import tasks.round.write_window as window
    import tasks.store as store

    for name in ("judge_spools", "land_leftovers", "read_prior"):
        if hasattr(window, name):
            timed(window, name)
    timed_cm(store, "open_store", "store window")
    import tasks.ignore_list.variable_sync as variable_sync
    import tasks.store.settlement as settlement

    timed(settlement, "mark_running")
    timed(variable_sync, "reconcile")
    timed(variable_sync, "fetch_variable")
    if hasattr(steps, "round_guard"):
        timed_cm(steps, "round_guard", "round slot (guard entered)")
    dispatcher_cls = probe_worker.Dispatcher
    submit = dispatcher_cls.submit
    seen: set[str] = set()

    def first_submit(self: Any, call: Any, priority: Any = 0) -> Any:
        rid = getattr(call, "round_id", "")
        if rid not in seen:
            seen.add(rid)
            now = time.monotonic()
            with _LOCK:
                MARKS.append((threading.current_thread().name, "first probe handed to the worker", now, now))
        return submit(self, call, priority)

    dispatcher_cls.submit = first_submit  # type: ignore[method-assign]


def median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2] if s else 0.0


def report(out: dict[str, Any]) -> None:
    # group marks by (thread, admission interval): a pool thread runs several rounds one after another
    spans = sorted((t0, t1, th) for th, what, t0, t1 in MARKS if what == "round (admission to end)")
    per: list[dict[str, Any]] = []
    for t0, t1, th in spans:
        marks: dict[str, tuple[float, float]] = {}
        for tt, what, a, b in MARKS:
            if tt == th and t0 <= a <= t1:
                marks.setdefault(what, (a, b))  # the first of each
        calls = [c for c in CALLS if c["thread"] == th and t0 <= c["t0"] <= t1]
        first = marks.get("first probe handed to the worker", (None, None))[0]
        before = [c for c in calls if first is None or c["t0"] < first]
        per.append({"admitted": t0, "end": t1, "marks": marks, "first_probe": first, "calls_before": before,
                    "calls_all": calls})
    t_cycle = min((p["admitted"] for p in per), default=0.0)
    lat = [p["first_probe"] - p["admitted"] for p in per if p["first_probe"]]
    print(f"rounds: {len(per)}; admission -> first probe handed to the worker: median {median(lat) * 1000:.0f} ms, "
          f"max {max(lat, default=0) * 1000:.0f} ms")
    steps = ("flow function entered", "round slot (guard entered)", "load_prior", "judge_spools",
             "store window", "store window held", "land_leftovers", "read_prior", "discover",
             "first probe handed to the worker")
    print("per round (ms from admission):  " + " | ".join(steps) + " | API calls before the first probe (ms)")
    for p in per[:40]:
        cells = []
        for s in steps:
            m = p["marks"].get(s)
            cells.append("-" if m is None else f"{(m[0] - p['admitted']) * 1000:.0f}"
                         + (f"+{(m[1] - m[0]) * 1000:.0f}" if m[1] else ""))
        api = sum(c["t1"] - c["t0"] for c in p["calls_before"]) * 1000
        print(f"  +{(p['admitted'] - t_cycle):6.2f} s  " + "  ".join(f"{c:>10}" for c in cells)
              + f"   {len(p['calls_before'])} calls, {api:.0f} ms")
    by_route: dict[str, list[float]] = {}
    for p in per:
        for c in p["calls_before"]:
            by_route.setdefault(c["route"], []).append((c["t1"] - c["t0"]) * 1000)
    n = max(1, len(per))
    print(f"API calls of a round's start (admission -> first probe), per round over {len(per)} rounds:")
    for route, xs in sorted(by_route.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {route:<60} {len(xs) / n:5.1f} calls  {sum(xs) / n:7.0f} ms  (median {median(xs):.0f} ms)")
    tail: dict[str, list[float]] = {}
    for p in per:
        for c in p["calls_all"]:
            if p["first_probe"] is not None and c["t0"] >= p["first_probe"]:
                tail.setdefault(c["route"], []).append((c["t1"] - c["t0"]) * 1000)
    print("API calls of a round after its first probe (its end), per round:")
    for route, xs in sorted(tail.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {route:<60} {len(xs) / n:5.1f} calls  {sum(xs) / n:7.0f} ms  (median {median(xs):.0f} ms)")
    others: dict[str, list[float]] = {}
    for c in CALLS:
        if not c["thread"].startswith("round"):
            kind = re.sub(r"[-_]?\d+$", "", c["thread"])
            others.setdefault(f"[{kind}] {c['route']}", []).append((c["t1"] - c["t0"]) * 1000)
    print("API calls of other threads (whole run):")
    for route, xs in sorted(others.items(), key=lambda kv: -sum(kv[1]))[:25]:
        print(f"  {route:<72} {len(xs):5d} calls  {sum(xs):8.0f} ms  (median {median(xs):.0f} ms)")
    from tasks.store.connection import HELD_S

    holds = sorted(((b - a, a, th) for th, what, a, b in MARKS if what == "store window held"), reverse=True)
    print("longest store windows (held ms, at s from the first admission, thread):",
          ", ".join(f"{d * 1000:.0f} @{a - t_cycle:.1f} {th}" for d, a, th in holds[:12]))
    if holds:
        d, a, th = holds[0]
        inside = sorted((x, y, w) for tt, w, x, y in MARKS if tt == th and a <= x <= a + d)
        print("  inside the longest:", ", ".join(f"{w} +{(x - a) * 1000:.0f}..{(y - a) * 1000:.0f} ms"
                                                   for x, y, w in inside))

    held = [h for _, ro, h in HELD_S if not ro]
    if held:
        print(f"store windows: {len(held)} held, median {median(held) * 1000:.1f} ms, "
              f"max {max(held) * 1000:.0f} ms, total {sum(held):.1f} s")
    out.update(latency_ms={"median": median(lat) * 1000, "max": max(lat, default=0) * 1000},
               by_route={k: {"calls_per_round": len(v) / n, "ms_per_round": sum(v) / n} for k, v in by_route.items()})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=int, default=40)
    ap.add_argument("--endpoints", type=int, default=15)
    ap.add_argument("--models-in-flight", type=int)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args()
    from bench_catalog import simulator_process

    from provider_canary.simulator.catalog import CatalogSpec, catalog_toml

    work = Path(tempfile.mkdtemp(prefix="profile-round-start-"))
    fleet = work / "fleet.toml"
    fleet.write_text(catalog_toml(CatalogSpec(models=args.models, endpoints=args.endpoints, seed=7)))
    from provider_canary.simulator.fleet_file import load_fleet

    models = [m.id for m in load_fleet(fleet).models]
    with simulator_process(fleet, work / "simulator.log") as (_, base_url, key):
        cfg = work / "canary.toml"
        (work / "none.toml").write_text("", encoding="utf-8")  # no built-in exclusions (missing: an error)
        lines = [f"models = {json.dumps(models)}", 'mode = "observe"', f'base_url = "{base_url}"',
                 f'db_path = "{work / "canary.duckdb"}"', f'publish_dir = "{work / "published"}"',
                 f'exclusions_file = "{work / "none.toml"}"']
        if args.models_in_flight:
            lines.append(f"models_in_flight = {args.models_in_flight}")
        cfg.write_text("\n".join(lines) + "\n")
        os.environ.update(OPENROUTER_API_KEY=key, PREFECT_HOME=str(work / "prefect-home"), CANARY_PROGRESS_S="0")
        for name in ("CANARY_DB", "CANARY_CONFIG", "SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL", "OPENROUTER_BASE_URL"):
            os.environ.pop(name, None)
        patch_httpx()
        from provider_canary.cli.main import app

        instrument()
        t0 = time.monotonic()
        try:
            app(["run", "--config", str(cfg), "--db", str(work / "canary.duckdb")], standalone_mode=False)
        except SystemExit:
            pass
        wall = time.monotonic() - t0
    out: dict[str, Any] = {"models": args.models, "wall_s": wall, "load": os.getloadavg()}
    print(f"\n{args.models} x {args.endpoints}: canary run {wall:.1f} s, load {os.getloadavg()[0]:.1f}")
    report(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
