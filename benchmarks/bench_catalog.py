"""Catalog benchmark: one cycle over N models x M simulated endpoints, beside a one-after-another baseline.

    .venv/bin/python benchmarks/bench_catalog.py                  # 10 models x 15 endpoints (~6 min today)
    .venv/bin/python benchmarks/bench_catalog.py --quick          # 3 x 5, smoke run (~1.5 min)
    .venv/bin/python benchmarks/bench_catalog.py --models 100 --endpoints 15   # the catalog (add
                                         # --baseline none while `canary run` is itself the loop: ~20 min)
    .venv/bin/python benchmarks/bench_catalog.py --ttft-integrity --baseline none   # 100 x 15, all healthy,
                                         # 0.3 s first tokens (~8 min today)

Driven the way an operator drives the canary, so it measures today's code and tomorrow's without edits:

* the simulator runs as its own process (`canary simulator --fleet F`, a generated `[catalog]` fleet file,
  simulator/catalog.py), started afresh for each phase so fault counters and its CPU count per phase;
* cycle: `canary run --config C --db D` as a subprocess (every configured model; today one after another,
  after issue 12 all of them concurrently in one process);
* baseline, the same catalog with models strictly one after another: `loop` (default) is one process calling
  the deployment entry point `flows/round.py:canary_round(model=M)` per model (one start-up, like today's
  `canary run`); `per-model` is one `canary run --model M` subprocess per model (start-up paid per model);
* before both, an unmeasured warm-up `canary run --model <first>` migrates the private PREFECT_HOME and warms
  the page cache. A configured PREFECT_API_URL in the environment is passed through (no temporary server).

Figures (catalog_figures.py), from the run's DuckDB file, its published ignore lists and /proc:
  wall / slowest chain   phase wall time (process start to exit) / the slowest single probe chain, a chain
                         being one endpoint's attempts in one round, total_ms summed (today the contracts of
                         an endpoint run in parallel, so a single-model ratio below 1 is possible);
  peak RSS               the summed VmRSS of the canary process and all its descendants (Prefect's temporary
                         server included), polled every 0.25 s; per-model baseline: the largest run;
  CPU                    user + system seconds of the whole canary tree (getrusage of waited children);
  simulator CPU share    the simulator's CPU seconds / the time any probe was in flight (1.0 = one core
                         busy: then the simulator, not the canary, would be the bottleneck);
  TTFT error             ttft_ms minus the simulator's planned first-token delay, over every attempt on a
                         healthy endpoint; healthy endpoints failing ttft (or any contract) are false alarms;
                         a faulty endpoint counts as seen when any contract is not `pass` (pin_not_honoured
                         is `inconclusive`; mojibake on an English-only reply is invisible);
  round overhead         per round: (published ignore-list mtime - round start) - probe phase (first attempt
                         start to last attempt end); non-probing time = wall - the union of attempt intervals;
  TTFT floor             benchmarks/ttft_floor.py: the same error measured by a plain httpx client in 16
                         threads (or --concurrency) against a fresh simulator: the machine's and the
                         simulator's share of the error; what the canary measures beyond it is its own.
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
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from catalog_figures import TreeSampler, cpu_seconds, run_figures  # noqa: E402
from ttft_floor import first_text_s  # noqa: E402

from simulator.catalog import (  # noqa: E402
    CatalogSpec,
    catalog_toml,
    endpoint_role,
    planned_first_token_s,
    role_counts,
    roles,
)
from simulator.fleet_file import load_fleet  # noqa: E402

LOOP = """import sys, time
from flows.round import canary_round
config, db, models = sys.argv[1], sys.argv[2], sys.argv[3:]
for m in models:
    canary_round(model=m, config_path=config, db_path=db)
    print("round done", m, time.time(), flush=True)
"""
CHILD_ENV = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}
DROP_ENV = ("OPENROUTER_BASE_URL", "CANARY_DB", "CANARY_CONFIG", "SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL")


def canary_argv() -> list[str]:
    script = Path(sys.executable).with_name("canary")
    return [str(script)] if script.exists() else [sys.executable, "-c", "from cli.main import main; main()"]


@contextmanager
def simulator_process(fleet_file: Path, log: Path) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """`canary simulator --fleet F` on a free port; yields (process, base_url, api_key)."""
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


def write_config(
    path: Path, models: Sequence[str], base_url: str, work: Path, args: argparse.Namespace
) -> None:
    lines = [
        f"models = {json.dumps(list(models))}",
        'mode = "observe"',
        f'base_url = "{base_url}"',
        f'db_path = "{work / "canary.duckdb"}"',
        f'publish_dir = "{work / "published"}"',
        f'exclusions_file = "{work / "no-exclusions.toml"}"',
        f"languages = {json.dumps(args.languages.split(','))}",
    ]
    if args.concurrency:
        lines.append(f"concurrency = {args.concurrency}")
    if args.models_in_flight:
        lines.append(f"models_in_flight = {args.models_in_flight}")
    path.write_text("\n".join(lines) + "\n")


def run_measured(
    argvs: Sequence[list[str]], cwd: Path, env: dict[str, str], timeout_s: float
) -> dict[str, Any]:
    """Run the commands one after another; wall, CPU, peak tree RSS and exit codes of the whole lot."""
    wall = cpu = peak = 0.0
    epochs: tuple[float, float] | None = None
    procs, codes = 0, []
    names: list[str] = []
    for i, argv in enumerate(argvs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        epochs = epochs or (time.time(), 0.0)
        with open(cwd / f"out-{i}.log", "w") as out:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            with TreeSampler(proc.pid) as sampler:
                try:
                    codes.append(proc.wait(timeout_s))
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    codes.append(proc.wait())
        wall += time.monotonic() - t0
        epochs = (epochs[0], time.time())
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        peak = max(peak, sampler.peak_rss_mb)
        procs = max(procs, sampler.peak_processes)
        if i == 0:
            names = sorted(set(sampler.names.values()))
    return {
        "wall_s": wall,
        "started_epoch": epochs[0] if epochs else None,
        "ended_epoch": epochs[1] if epochs else None,
        "cpu_s": cpu,
        "peak_rss_mb": peak,
        "peak_processes": procs,
        "exit_codes": sorted(set(codes)),
        "processes_seen": names,
    }


def phase(
    name: str,
    args: argparse.Namespace,
    fleet_file: Path,
    models: list[str],
    work: Path,
    plan: tuple[dict[Any, str], dict[Any, float]],
) -> dict[str, Any]:
    work.mkdir(parents=True)
    cfg = work / "canary.toml"
    with simulator_process(fleet_file, work / "simulator.log") as (sim, base_url, key):
        write_config(cfg, models, base_url, work, args)
        env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
        env.update(CHILD_ENV, OPENROUTER_API_KEY=key, PREFECT_HOME=str(args.prefect_home))
        db = str(work / "canary.duckdb")
        run = [*canary_argv(), "run", "--config", str(cfg), "--db", db]
        if name == "warm-up":
            argvs = [[*run, "--model", models[0]]]
        elif name == "cycle":
            argvs = [run]
        elif args.baseline == "per-model":
            argvs = [[*run, "--model", m] for m in models]
        else:
            argvs = [[sys.executable, "-c", LOOP, str(cfg), db, *models]]
        sim_cpu0 = cpu_seconds(sim.pid)
        load0 = os.getloadavg()
        res = run_measured(argvs, work, env, args.timeout)
        res["simulator_cpu_s"] = cpu_seconds(sim.pid) - sim_cpu0
        res["load_before"], res["load_after"] = load0, os.getloadavg()
    if res["exit_codes"] != [0]:
        tail = (work / "out-0.log").read_text()[-1500:]
        print(f"{name}: exit codes {res['exit_codes']} (log {work}/out-*.log)\n{tail}", file=sys.stderr)
    if Path(db).exists():
        res.update(run_figures(db, plan[0], plan[1], work / "published"))
        probing = res.get("probing_s") or 0.0
        res["simulator_cpu_share"] = res["simulator_cpu_s"] / probing if probing else None
        res["wall_per_slowest_chain"] = (
            res["wall_s"] / res["slowest_chain_s"] if res["slowest_chain_s"] else None
        )
        if res.get("first_attempt_epoch") and res["started_epoch"]:
            res["start_to_first_probe_s"] = res["first_attempt_epoch"] - res["started_epoch"]
            res["last_probe_to_exit_s"] = res["ended_epoch"] - res["last_attempt_end_epoch"]
        rounds = res.get("rounds") or 0
        res["non_probing_s_per_round"] = (res["wall_s"] - probing) / rounds if rounds else None
    return res


def ttft_floor(fleet_file: Path, work: Path, requests: int, threads: int) -> dict[str, Any] | None:
    """benchmarks/ttft_floor.py against a fresh simulator: the error a plain httpx client measures."""
    with simulator_process(fleet_file, work / "floor-simulator.log") as (_, base_url, key):
        argv = [sys.executable, str(Path(__file__).with_name("ttft_floor.py")), "--base-url", base_url]
        argv += ["--key", key, "--fleet", str(fleet_file), "--requests", str(requests)]
        proc = subprocess.run(argv + ["--threads", str(threads)], capture_output=True, text=True, check=False)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if not lines:
        print(f"ttft floor failed: {proc.stderr[-800:]}", file=sys.stderr)
        return None
    return dict(json.loads(lines[-1]))


def _f(value: Any, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def table(cycle: dict[str, Any], base: dict[str, Any] | None, base_name: str) -> str:
    def ttft(r: dict[str, Any]) -> str:
        t = r.get("ttft_error_ms") or {}
        return (
            "/".join(_f(t.get(k), "{:.0f}") for k in ("p50", "p95", "p99", "max")) + f" (n={t.get('n', 0)})"
        )

    rows = [
        ("wall s", lambda r: _f(r["wall_s"], "{:.1f}")),
        ("slowest single chain s", lambda r: _f(r.get("slowest_chain_s"), "{:.1f}")),
        ("wall / slowest chain", lambda r: _f(r.get("wall_per_slowest_chain"))),
        (
            "peak RSS MB, process tree",
            lambda r: _f(r["peak_rss_mb"], "{:.0f}") + f" ({r['peak_processes']} procs)",
        ),
        ("CPU s, canary tree", lambda r: _f(r["cpu_s"], "{:.1f}")),
        ("simulator CPU share while probing", lambda r: _f(r.get("simulator_cpu_share"))),
        ("TTFT error ms p50/p95/p99/max", ttft),
        ("healthy endpoints failing ttft", lambda r: str(r.get("healthy_failing_ttft", "-"))),
        ("healthy endpoints failing any", lambda r: str(r.get("healthy_failing_any", "-"))),
        (
            "slow starts failing ttft",
            lambda r: f"{r.get('slow_starts_failing_ttft', '-')}/{r.get('slow_starts', '-')}",
        ),
        ("faulty endpoints not passing", lambda r: f"{r.get('faulty_caught', '-')}/{r.get('faulty', '-')}"),
        (
            "round overhead s mean/median/max",
            lambda r: "/".join(_f(r.get(f"round_overhead_s_{k}")) for k in ("mean", "median", "max")),
        ),
        (
            "start to first probe / last probe to exit s",
            lambda r: _f(r.get("start_to_first_probe_s")) + "/" + _f(r.get("last_probe_to_exit_s")),
        ),
        ("non-probing s per round", lambda r: _f(r.get("non_probing_s_per_round"))),
        ("rounds complete / attempts", lambda r: f"{r.get('rounds_complete', '-')}/{r.get('attempts', '-')}"),
    ]
    head = f"{'':<36}{'cycle (canary run)':>28}{'baseline (' + base_name + ')':>28}"
    lines = [head]
    for label, get in rows:
        lines.append(f"{label:<36}{get(cycle):>28}{(get(base) if base else '-'):>28}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=int)
    ap.add_argument("--endpoints", type=int)
    ap.add_argument("--quick", action="store_true", help="3 models x 5 endpoints (smoke run)")
    ap.add_argument(
        "--ttft-integrity",
        action="store_true",
        help="all endpoints healthy (no faults, no slow starts); default 100 x 15",
    )
    ap.add_argument("--faulty-share", type=float, default=0.05)
    ap.add_argument("--slow-start-share", type=float, default=0.067)
    ap.add_argument("--slow-start-s", type=float, default=12.0)
    ap.add_argument("--base-delay-s", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--languages", default="en,es,pt,fr,de")
    ap.add_argument("--concurrency", type=int, help="write `concurrency = N` into the config")
    ap.add_argument("--models-in-flight", type=int, help="write `models_in_flight = N` into the config")
    ap.add_argument("--baseline", choices=("loop", "per-model", "none"), default="loop")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--floor-requests", type=int, default=300, help="TTFT floor requests (0 = skip)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per canary process")
    ap.add_argument("--keep", type=Path, help="work directory to keep (default: a temporary one, removed)")
    args = ap.parse_args()
    default_models, default_endpoints = (
        (3, 5) if args.quick else (100, 15) if args.ttft_integrity else (10, 15)
    )
    spec = CatalogSpec(
        models=args.models or default_models,
        endpoints=args.endpoints or default_endpoints,
        faulty_share=0.0 if args.ttft_integrity else args.faulty_share,
        slow_start_share=0.0 if args.ttft_integrity else args.slow_start_share,
        slow_start_s=args.slow_start_s,
        base_delay_s=args.base_delay_s,
        seed=args.seed,
    )
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-catalog-"))
    work.mkdir(parents=True, exist_ok=True)
    args.prefect_home = work / "prefect-home"
    fleet_file = work / "fleet.toml"
    fleet_file.write_text(catalog_toml(spec))
    fleet = load_fleet(fleet_file)
    plan = (
        roles(fleet),
        {(m.id, e.tag): planned_first_token_s(e) * 1000 for m in fleet.models for e in m.endpoints},
    )
    models = [m.id for m in fleet.models]
    print(
        f"catalog bench: {spec.models} models x {spec.endpoints} endpoints, {role_counts(fleet)}, "
        f"seed {spec.seed}, languages {args.languages}; {os.cpu_count()} cores, load {os.getloadavg()}"
    )
    try:
        if not args.no_warmup:
            phase("warm-up", args, fleet_file, models, work / "warm-up", plan)
        cycle = phase("cycle", args, fleet_file, models, work / "cycle", plan)
        base = (
            None
            if args.baseline == "none"
            else phase("baseline", args, fleet_file, models, work / "baseline", plan)
        )
        floor = None
        if args.floor_requests:
            threads = args.concurrency or 16
            floor = ttft_floor(fleet_file, work, args.floor_requests, threads)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(table(cycle, base, args.baseline))
    if floor:
        print(
            f"TTFT error floor, plain httpx client in {floor['threads']} threads, same simulator: "
            + "/".join(_f(floor[k], "{:.0f}") for k in ("p50", "p95", "p99", "max"))
            + f" ms p50/p95/p99/max (n={floor['n']})"
        )
    if cycle.get("simulator_cpu_share") and cycle["simulator_cpu_share"] > 0.7:
        print("warning: the simulator used > 0.7 of a core while probing: it may be the bottleneck")
    print("processes in the cycle's tree: " + " | ".join(cycle["processes_seen"]))
    record = {
        "spec": {k: v for k, v in vars(spec).items() if k != "fault_kinds"},
        "roles": role_counts(fleet),
        "cores": os.cpu_count(),
        "baseline_kind": args.baseline,
        "cycle": cycle,
        "baseline": base,
        "ttft_floor_ms": floor,
    }
    for r in (cycle, base):
        if r:
            r.pop("processes_seen", None)
    print(json.dumps(record, default=str))


if __name__ == "__main__":
    main()
