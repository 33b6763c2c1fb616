"""Catalog benchmark: one cycle over N models x M simulated endpoints, this tree beside a baseline tree, same run.

    .venv/bin/python benchmarks/bench_catalog.py --baseline-tree ../catalog-base          # 100 and 300 models x 15
    .venv/bin/python benchmarks/bench_catalog.py --models 100 --baseline-tree ../catalog-base --api server
    .venv/bin/python benchmarks/bench_catalog.py --models 100 --baseline-tree ../catalog-base --api postgres
    .venv/bin/python benchmarks/bench_catalog.py --models 100 --cycles 2 --baseline-tree ../catalog-base  # + history
    .venv/bin/python benchmarks/bench_catalog.py --quick                                   # 3 x 5, this tree only
    .venv/bin/python benchmarks/bench_catalog.py --ttft-integrity --models 100             # all healthy

`--baseline-tree DIR`: a checkout of the previous main with its own `.venv` (`git worktree add DIR <commit>`,
then `DIR/scripts/setup`); each size's cycle runs in both trees, one after the other, against the same fleet and
a fresh simulator each, and the table gives both and their ratio. Without it, this tree only.

Driven the way an operator drives the canary, so it measures any tree without edits:

* the simulator runs as its own process (`canary simulator --fleet F`, a generated `[catalog]` fleet file,
  provider_canary/simulator/catalog.py), started afresh for each phase so fault counters and its CPU count per phase;
* a cycle is `canary run --config C --db D` as a subprocess of the tree's own `.venv`, every configured model;
* before the first cycle of each tree, an unmeasured warm-up `canary run --model <first>` migrates its PREFECT_HOME
  and warms the page cache;
* `--api private` (default): each `canary run` starts its private Prefect server, inside the measured tree (the
  issue's "peak tree RSS, private API server included"); `--api server`: the benchmark starts one `prefect server
  start` outside the measured trees first and passes its PREFECT_API_URL (no server in the tree); `--api postgres`:
  the same server on a throwaway PostgreSQL cluster (production's shape, deploy/). A PREFECT_API_URL already in the
  environment is used as `server`.

Figures (catalog_figures.py), from the run's DuckDB file, its published ignore lists and /proc:
  wall                   phase wall time (process start to exit), with the load average before and after;
  peak RSS               the summed VmRSS of the canary process and all its descendants, polled every 0.25 s, and
                         each kind of process's own peak (the process tree of docs/operations.md);
  CPU                    user + system seconds of the whole canary tree (getrusage of waited children), and per
                         endpoint-round (models x endpoints);
  memory per extra model (peak RSS of the largest size - of the smallest) / (the models between them);
  simulator CPU share    the simulator's CPU seconds / the time any probe was in flight (near 1.0: the simulator,
                         not the canary, would be the bottleneck);
  TTFT error             ttft_ms minus the simulator's planned first-token delay, over every attempt on a
                         healthy endpoint; healthy endpoints failing ttft (or any contract) are false alarms;
                         a faulty endpoint counts as seen when any contract is not `pass`;
  round overhead         per round: (published ignore-list mtime - round start) - probe phase;
  TTFT floor             benchmarks/ttft_floor.py against a fresh simulator at the chosen concurrency: the canary's
                         probe worker alone, and a plain httpx client in as many threads: the machine's and the
                         simulator's share of the error; what a cycle measures beyond it is the cycle's own.
Each simulator gets a few warm-up requests first (a fresh one answers its first requests ~150 ms late).
The last line of output is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from catalog_figures import TreeSampler, cpu_seconds, run_figures  # noqa: E402
from catalog_table import fmt as _f  # noqa: E402
from catalog_table import load as _load  # noqa: E402
from catalog_table import per_extra_model, table  # noqa: E402
from fault_fleet import fleet_toml, quarter_models  # noqa: E402
from round_starts import budget_figures, round_start_figures  # noqa: E402
from serve_phase import SERVE_ENV, until_served_cycle_ends  # noqa: E402
from ttft_floor import first_text_s  # noqa: E402

from provider_canary.simulator.catalog import (  # noqa: E402
    CatalogSpec,
    catalog_toml,
    endpoint_role,
    planned_first_token_s,
    role_counts,
    roles,
)
from provider_canary.simulator.fleet_file import load_fleet  # noqa: E402
from tests.support import NO_EXCLUSIONS  # noqa: E402

CHILD_ENV = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}
DROP_ENV = ("OPENROUTER_BASE_URL", "CANARY_DB", "CANARY_CONFIG", "SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL",
            "MALLOC_ARENA_MAX", "ARROW_DEFAULT_MEMORY_POOL")


def canary_argv(tree: Path = ROOT) -> list[str]:
    script = tree / ".venv" / "bin" / "canary"
    if not script.exists():
        raise SystemExit(f"no {script}: run {tree}/scripts/setup first")
    return [str(script)]


def runs_its_own_code(tree: Path) -> str | None:
    """Why `tree`'s `canary` would not run `tree`'s code (None when it does): a `.venv` symlinked or copied from
    another checkout imports that checkout's `tasks` through its editable install, and the comparison would be
    of one tree with itself."""
    probe = "import os, tasks; print(os.path.realpath(tasks.__file__))"
    out = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", probe], cwd="/", capture_output=True,
                         text=True, timeout=60)
    where = Path(out.stdout.strip() or "/")
    if out.returncode != 0 or not where.is_relative_to(tree.resolve()):
        return (f"{tree}/.venv imports tasks from {where.parent if out.returncode == 0 else '(nothing)'}, not from "
                f"{tree}: give the tree its own .venv ({tree}/scripts/setup, or `pip install -e {tree} --no-deps` "
                "in a copy)")
    return None


@contextmanager
def simulator_process(fleet_file: Path, log: Path) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """`canary simulator --fleet F` (this tree's) on a free port; yields (process, base_url, api_key)."""
    argv = [*canary_argv(), "simulator", "--port", "0", "--fleet", str(fleet_file)]
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
        try:
            assert proc.stdout is not None
            found: dict[str, str] = {}
            deadline = time.monotonic() + 120
            while len(found) < 2 and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    raise SystemExit(f"simulator exited: {log.read_text()[-500:]}")
                key, _, value = line.strip().partition("=")
                if key in ("OPENROUTER_BASE_URL", "OPENROUTER_API_KEY"):
                    found[key] = value
            base_url, key = found["OPENROUTER_BASE_URL"], found["OPENROUTER_API_KEY"]
            warm_simulator(base_url, key, fleet_file)
            yield proc, base_url, key
        finally:
            stop(proc)


@contextmanager
def prefect_server(log: Path, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """`prefect server start` (this tree's) on a free port, outside every measured tree (`extra_env`: e.g. its
    database); yields its API URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, **CHILD_ENV, "PREFECT_HOME": str(log.parent / "prefect-server-home"),
           "PREFECT_UI_ENABLED": "0", **(extra_env or {})}
    env.pop("PREFECT_API_URL", None)
    argv = [str(ROOT / ".venv" / "bin" / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            raise SystemExit(f"prefect server did not start: {log.read_text()[-500:]}")
        yield url
    finally:
        stop(proc)


def warm_simulator(base_url: str, key: str, fleet_file: Path, requests: int = 4) -> None:
    """A fresh simulator's first replies are ~150 ms late (lazy imports, corpus): send a few before measuring,
    to healthy endpoints only (their replies have no fault counters to disturb)."""
    fleet = load_fleet(fleet_file)
    healthy = [(m.id, e.tag) for m in fleet.models for e in m.endpoints if endpoint_role(e) == "healthy"]
    with httpx.Client(timeout=30) as client:
        for model, tag in healthy[:requests]:
            first_text_s(client, base_url.rstrip("/") + "/chat/completions", key, model, tag)


def stop(proc: subprocess.Popen[Any]) -> None:
    """Ctrl-C, then SIGKILL, to the process group the benchmark started (its own, by id)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def write_config(path: Path, models: Sequence[str], base_url: str, work: Path, args: argparse.Namespace) -> None:
    lines = [
        f"models = {json.dumps(list(models))}",
        'mode = "observe"',
        f'base_url = "{base_url}"',
        f'db_path = "{work / "canary.duckdb"}"',
        f'publish_dir = "{work / "published"}"',
        f'exclusions_file = "{NO_EXCLUSIONS}"',
        f"languages = {json.dumps(args.languages.split(','))}",
    ]
    if args.concurrency:
        lines.append(f"concurrency = {args.concurrency}")
    if args.models_in_flight:
        lines.append(f"models_in_flight = {args.models_in_flight}")
    path.write_text("\n".join(lines) + "\n")


def run_measured(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                 log: str = "out.log", until: Callable[[subprocess.Popen[str], float], None] | None = None
                 ) -> dict[str, Any]:
    """Run the command (`until(proc, timeout_s)`: what ends it, else its own exit); its wall, CPU, peak tree RSS (in
    all and per process) and exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, started = time.monotonic(), time.time()
    with open(cwd / log, "w") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        with TreeSampler(proc.pid) as sampler:
            try:
                if until is not None:
                    until(proc, timeout_s)
                code = proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": time.monotonic() - t0,
        "started_epoch": started,
        "ended_epoch": time.time(),
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak_rss_mb": sampler.peak_rss_mb,
        "peak_rss_by_process_mb": {k: round(v) for k, v in sorted(sampler.peak_by_role.items())},
        "peak_processes": sampler.peak_processes,
        "exit_code": code,
    }


def phase(name: str, tree: Path, args: argparse.Namespace, fleet_file: Path, models: list[str], work: Path,
          plan: tuple[dict[Any, str], dict[Any, float]], cycle: int = 1) -> dict[str, Any]:
    """One `canary run` of `tree` (a warm-up of its first model, or the cycle of every model); `cycle` > 1: the
    next cycle on the same database (its rounds know the previous ones), against a fresh simulator."""
    work.mkdir(parents=True, exist_ok=cycle > 1)
    cfg = work / "canary.toml"
    with simulator_process(fleet_file, work / f"simulator-{cycle}.log") as (sim, base_url, key):
        write_config(cfg, models, base_url, work, args)
        env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
        env.update(CHILD_ENV, OPENROUTER_API_KEY=key, PREFECT_HOME=str(args.work / f"prefect-home-{tree.name}"))
        if args.api_url:
            env["PREFECT_API_URL"] = args.api_url
        else:
            env.pop("PREFECT_API_URL", None)
        db = str(work / "canary.duckdb")
        argv = [*canary_argv(tree), "run", "--config", str(cfg), "--db", db]
        if name == "warm-up":
            argv += ["--model", models[0]]
        sim_cpu0 = cpu_seconds(sim.pid)
        load0 = os.getloadavg()
        if name != "warm-up" and args.serve:  # serve's start-up cycle, on a server of its own (serve_phase.py)
            with prefect_server(work / f"prefect-server-{cycle}.log") as api_url:
                env.update(SERVE_ENV, PREFECT_API_URL=api_url)
                argv = [*canary_argv(tree), "serve", "--config", str(cfg)]
                res = run_measured(argv, work, env, args.timeout, f"out-{cycle}.log", until_served_cycle_ends(api_url))
        else:
            res = run_measured(argv, work, env, args.timeout, f"out-{cycle}.log")
        res["simulator_cpu_s"] = cpu_seconds(sim.pid) - sim_cpu0
        res["load_before"], res["load_after"] = load0, os.getloadavg()
    if res["exit_code"] != 0:
        tail = (work / f"out-{cycle}.log").read_text()[-1500:]
        print(f"{name} ({tree}): exit code {res['exit_code']} (log {work}/out-{cycle}.log)\n{tail}", file=sys.stderr)
    if name != "warm-up" and Path(db).exists():
        since = res["started_epoch"] if cycle > 1 else None
        res.update(run_figures(db, plan[0], plan[1], work / "published", since_epoch=since))
        res.update(round_start_figures(db, models, args.models_in_flight or 32, work / "published", since,
                                       work / f"out-{cycle}.log"))
        res.update(budget_figures(db, args.concurrency or 80, since))
        probing = res.get("probing_s") or 0.0
        res["simulator_cpu_share"] = res["simulator_cpu_s"] / probing if probing else None
        endpoint_rounds = len(models) * args.endpoints_n
        res["cpu_ms_per_endpoint_round"] = res["cpu_s"] * 1000 / endpoint_rounds if endpoint_rounds else None
        if res.get("first_attempt_epoch") and res["started_epoch"]:
            res["start_to_first_probe_s"] = res["first_attempt_epoch"] - res["started_epoch"]
            res["last_probe_to_exit_s"] = res["ended_epoch"] - res["last_attempt_end_epoch"]
    return res


def ttft_floor(fleet_file: Path, work: Path, requests: int, in_flight: int) -> list[dict[str, Any]]:
    """benchmarks/ttft_floor.py against a fresh simulator: the canary's probe worker, and a plain threaded client."""
    with simulator_process(fleet_file, work / "floor-simulator.log") as (_, base_url, key):
        argv = [sys.executable, str(Path(__file__).with_name("ttft_floor.py")), "--base-url", base_url, "--key", key,
                "--fleet", str(fleet_file), "--requests", str(requests), "--threads", str(in_flight)]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    found = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    if not found:
        print(f"ttft floor failed: {proc.stderr[-800:]}", file=sys.stderr)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="100,300", help="catalog sizes, comma-separated (default 100,300)")
    ap.add_argument("--endpoints", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="3 models x 5 endpoints (smoke run)")
    ap.add_argument("--baseline-tree", type=Path, help="a checkout of the previous main with its own .venv")
    ap.add_argument("--api", choices=("private", "server", "postgres"), default="private",
                    help="private: each canary run starts its own Prefect server (in the tree); server: one "
                         "`prefect server start` outside the measured trees; postgres: the same on a throwaway "
                         "PostgreSQL cluster (production's shape, deploy/)")
    ap.add_argument("--serve", action="store_true",
                    help="measure `canary serve`'s start-up cycle instead of `canary run`, each on a `prefect server "
                         "start` of its own (a served deployment's scheduled runs must not reach the other tree's "
                         "serve; benchmarks/serve_phase.py)")
    ap.add_argument("--ttft-integrity", action="store_true", help="all endpoints healthy (no faults, no slow starts)")
    ap.add_argument("--fleet", choices=("catalog", "quarters"), default="catalog",
                    help="catalog: the generated catalog's fault mix (--faulty-share, --slow-start-share); quarters: "
                         "issue 45's, a quarter of the models each with a 12 s slow start, corrupted openings, "
                         "invalid JSON or a 429 with Retry-After: 5 on --quarter-endpoints of their endpoints "
                         "(benchmarks/fault_fleet.py)")
    ap.add_argument("--quarter-endpoints", type=int, default=5, help="with --fleet quarters (default 5)")
    ap.add_argument("--faulty-share", type=float, default=0.05)
    ap.add_argument("--slow-start-share", type=float, default=0.067)
    ap.add_argument("--slow-start-s", type=float, default=12.0)
    ap.add_argument("--base-delay-s", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--languages", default="en,es,pt,fr,de")
    ap.add_argument("--concurrency", type=int, help="write `concurrency = N` into the config (both trees)")
    ap.add_argument("--models-in-flight", type=int, help="write `models_in_flight = N` into the config (both trees)")
    ap.add_argument("--cycles", type=int, default=1,
                    help="cycles per tree and size on one database (the later ones start from the earlier ones' "
                         "history: production's steady state); a table per cycle")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--floor-requests", type=int, default=1024, help="TTFT floor requests (0 = skip)")
    ap.add_argument("--floor-in-flight", type=int, default=256, help="requests in flight for the TTFT floor")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per canary process")
    ap.add_argument("--keep", type=Path, help="work directory to keep (default: a temporary one, removed)")
    args = ap.parse_args()
    sizes = [3] if args.quick else [int(x) for x in str(args.models).split(",") if x.strip()]
    args.endpoints_n = 5 if args.quick else args.endpoints
    trees = {"this tree": ROOT}
    if args.baseline_tree:
        trees["baseline"] = args.baseline_tree.resolve()
        canary_argv(trees["baseline"])
    for tree in trees.values():
        if (why := runs_its_own_code(tree)) is not None:
            raise SystemExit(f"bench_catalog: {why}")
    args.work = args.keep or Path(tempfile.mkdtemp(prefix="bench-catalog-"))
    args.work.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, dict[str, Any]]] = {}
    floor: list[dict[str, Any]] = []
    print(f"catalog bench: sizes {sizes} x {args.endpoints_n} endpoints, trees {', '.join(map(str, trees.values()))}, "
          f"api {args.api}{' (canary serve)' if args.serve else ''}, fleet {args.fleet}, seed {args.seed}, "
          f"languages {args.languages}; {os.cpu_count()} cores, load {os.getloadavg()}", flush=True)
    try:
        with contextlib_api(args) as api_url:
            args.api_url = api_url
            warmed: set[str] = set()
            for size in sizes:
                spec = CatalogSpec(models=size, endpoints=args.endpoints_n,
                                   faulty_share=0.0 if args.ttft_integrity else args.faulty_share,
                                   slow_start_share=0.0 if args.ttft_integrity else args.slow_start_share,
                                   slow_start_s=args.slow_start_s, base_delay_s=args.base_delay_s, seed=args.seed)
                fleet_file = args.work / f"fleet-{size}.toml"
                fleet_file.write_text(catalog_toml(spec) if args.fleet == "catalog"
                                      else fleet_toml(quarter_models(spec, args.quarter_endpoints)))
                fleet = load_fleet(fleet_file)
                plan = (roles(fleet), {(m.id, e.tag): planned_first_token_s(e) * 1000
                                       for m in fleet.models for e in m.endpoints})
                models = [m.id for m in fleet.models]
                print(f"{size} models: {role_counts(fleet)}", flush=True)
                results[size] = {}
                for name, tree in trees.items():
                    slug = name.replace(" ", "-")
                    if not args.no_warmup and name not in warmed:
                        phase("warm-up", tree, args, fleet_file, models, args.work / f"warm-up-{slug}", plan)
                        warmed.add(name)
                    for cycle in range(1, args.cycles + 1):
                        res = phase("cycle", tree, args, fleet_file, models, args.work / f"cycle-{size}-{slug}",
                                    plan, cycle)
                        if cycle == 1:
                            results[size][name] = res
                        else:
                            results[size][name].setdefault("later_cycles", []).append(res)
                        print(f"  {name}, cycle {cycle}: wall {res['wall_s']:.1f} s (load {_load(res)}), peak RSS "
                              f"{res['peak_rss_mb']:.0f} MB, CPU {res['cpu_s']:.1f} s", flush=True)
            if args.floor_requests:
                floor = ttft_floor(args.work / f"fleet-{sizes[0]}.toml", args.work, args.floor_requests,
                                   args.floor_in_flight)
    finally:
        if not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)
    for size in sizes:
        print(table(size, results[size]))
        for k in range(2, args.cycles + 1):
            print(table(size, {n: r["later_cycles"][k - 2] for n, r in results[size].items()}, f"cycle {k}"))
    for name in trees:
        extra = per_extra_model(results, name)
        if extra is not None:
            print(f"memory per extra model, {name}: {extra:.2f} MB ({sizes[0]} -> {sizes[-1]} models)")
    for f in floor:
        print(f"TTFT error, {f['client']} at {f.get('in_flight') or f.get('threads')} in flight, same simulator: "
              + "/".join(_f(f[k], "{:.0f}") for k in ("p50", "p95", "p99", "max"))
              + f" ms p50/p95/p99/max (n={f['n']}), {_f(f.get('cpu_ms_per_request'))} ms CPU per request")
    print(json.dumps({"sizes": sizes, "endpoints": args.endpoints_n, "api": args.api, "cores": os.cpu_count(),
                      "trees": {k: str(v) for k, v in trees.items()}, "results": results, "ttft_floor": floor},
                     default=str))


@contextmanager
def contextlib_api(args: argparse.Namespace) -> Iterator[str | None]:
    """The PREFECT_API_URL the cycles use: none (each starts a private server), or one server for all."""
    if os.environ.get("PREFECT_API_URL"):
        args.api = "server"
        yield os.environ["PREFECT_API_URL"]
    elif args.api == "server":
        with prefect_server(args.work / "prefect-server.log") as url:
            yield url
    elif args.api == "postgres":  # tests/support/postgres.py: initdb + pg_ctl (Debian's `postgresql` package)
        from tests.support.postgres import postgres_cluster

        with postgres_cluster() as pg:
            pg.create_database("prefect")
            database = {"PREFECT_API_DATABASE_CONNECTION_URL": pg.url("prefect")}
            with prefect_server(args.work / "prefect-server.log", database) as url:
                yield url
    else:
        yield None


if __name__ == "__main__":
    main()
