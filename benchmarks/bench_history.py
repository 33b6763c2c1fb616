"""History builder benchmark: rounds/s of `canary demo --days` vs baselines measured in the same run.

    python benchmarks/bench_history.py [--days 0.25] [--variants pipeline,flow,flow-default,plain]

Each variant runs in its own process (a temporary Prefect server is per process and reads its settings at
start) over the same simulated days, fleet and clock:

* pipeline      build_history() as shipped: the round's steps in order, the next rounds' probes in flight
                (provider_canary/demo/pipeline.py), no Prefect API;
* flow          build_history(engine="flow"): a real `canary-round` flow run per round,
provider_canary/demo/history.py's
                lean settings (no flow heartbeats, idle server services off, a one-certificate CA bundle);
* flow-default  the same flow runs with Prefect's and httpx's defaults (lean=False);
* plain         baseline without orchestration or pipelining: the round's task functions (`.fn`) called in
                the flow's order (load prior, discover, probe per endpoint in a ThreadPoolExecutor of the same
                size, settle, save, the ignore-list file, deliver), one round after another, no Prefect API.

Printed per variant: rounds, wall, rounds/s, median round, the median probe phase (first request sent to
last response ended, from the landed attempts), the healthy endpoints' TTFT p99 (what the canary's own load
adds to a measurement), the CPU seconds per round of the whole process tree, and the DB size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def probe_phase_s(db: str) -> float:
    """Median over rounds of (last attempt end - first attempt start), seconds, from the snapshot."""
    from tasks import store

    con = store.open_snapshot(db)
    try:
        spans = con.execute(
            "SELECT date_diff('millisecond', min(started_at), max(started_at + to_milliseconds("
            "CAST(total_ms AS BIGINT)))) / 1000.0 FROM attempts GROUP BY round_id"
        ).fetchall()
    finally:
        con.close()
    return statistics.median(s[0] for s in spans) if spans else 0.0


def run_plain(days: float, db: str) -> dict[str, Any]:
    """The round's steps without Prefect (baseline)."""
    os.environ["PREFECT_SERVER_EPHEMERAL_ENABLED"] = "false"  # Variable reads fail fast: "unreachable"
    from provider_canary.demo.simulator_process import _one_cert_bundle

    os.environ["SSL_CERT_FILE"] = str(_one_cert_bundle())  # the same httpx.Client cost as the lean variant

    from provider_canary.demo import history as h
    from provider_canary.demo import scenario
    from tasks.config.loading import resolve_config
    from tasks.core.plan import by_endpoint, make_round_id, plan_probes
    from tasks.ignore_list.publish import publish_ignore_list
    from tasks.round import probe_task, steps

    rounds = int(round(days * h.ROUNDS_PER_DAY))
    stem = db.removesuffix(".duckdb")
    Path(f"{stem}.exclusions.toml").write_text(scenario.builtin_file_text(h.DEMO_MODEL))
    clock = h.SharedStepClock(h.HISTORY_START, Path(f"{stem}.clock"))
    walls: list[float] = []
    t_all = time.monotonic()
    with h.simulator_process(h.HISTORY_FLEET, time_scale=h.DEFAULT_TIME_SCALE, clock=clock) as sim:
        os.environ["OPENROUTER_API_KEY"] = sim.api_key
        ov = scenario.history_overrides(
            sim.base_url,
            db,
            time_scale=h.DEFAULT_TIME_SCALE,
            ladder=h.SHORT_LADDER,
            exclusions_file=f"{stem}.exclusions.toml",
            publish_dir=f"{stem}-published",
        )
        cfg = resolve_config(None, ov)
        model = h.DEMO_MODEL
        for _ in range(rounds):
            t0, ts = time.monotonic(), clock.now()
            rid = make_round_id(model, ts)
            prior, variable_value = steps.load_prior(cfg, model, rid, ts)
            endpoints = steps.discover(cfg, model)
            plans = by_endpoint(plan_probes(endpoints, cfg.languages, prior.previous_languages))
            attempts = probe_task.probe_round(plans, rid, cfg)[0]
            settled = steps.settle(prior, attempts, endpoints, cfg, ts, rid)
            settled, status = steps.save(cfg, settled, variable_value)
            publish_ignore_list(cfg, settled.ignore, artifact=False)  # the artifacts need an API
            steps.deliver(cfg, ts)
            walls.append(time.monotonic() - t0)
            clock.advance(timedelta(minutes=30))
    clock.close()
    return {"rounds": rounds, "wall_s": time.monotonic() - t_all, "walls": walls}


#: Endpoints of the history fleet that are never slow (simulator/fleets/history.toml).
HEALTHY = ("deepinfra/fp8", "deepinfra/turbo", "fireworks", "cerebras", "sambanova", "parasail/fp8")


def healthy_ttft_p99_ms(db: str) -> float:
    from tasks import store

    con = store.open_snapshot(db)
    try:
        row = con.execute("SELECT quantile_cont(ttft_ms, 0.99) FROM attempts WHERE list_contains(?, tag)",
                          [list(HEALTHY)]).fetchone()
    finally:
        con.close()
    return float(row[0]) if row and row[0] is not None else 0.0


def run_variant(variant: str, days: float, db: str) -> dict[str, Any]:
    from catalog_figures import TreeSampler  # benchmarks/: this script's directory

    with TreeSampler(os.getpid()) as tree:
        if variant == "plain":
            res = run_plain(days, db)
        else:
            from provider_canary.demo.history import build_history

            engine = "pipeline" if variant == "pipeline" else "flow"
            r = build_history(days=days, db_path=db, engine=engine, lean=(variant != "flow-default"),
                              progress=False)
            res = {"rounds": r.rounds, "wall_s": r.wall_s, "walls": list(r.round_wall_s)}
    tree.sample()  # this process's CPU up to now (its children have exited: their last samples count)
    res["cpu_s"] = tree.cpu_s
    res["probe_phase_s"] = probe_phase_s(db)
    res["ttft_p99_ms"] = healthy_ttft_p99_ms(db)
    res["db_mb"] = Path(db).stat().st_size / 1e6
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=0.25)
    ap.add_argument("--variants", default="pipeline,flow,flow-default,plain")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print("RESULT " + json.dumps(run_variant(args.child, args.days, args.db)), flush=True)
        return
    print(
        f"history benchmark: {args.days:g} simulated days per variant, 2 shared cores; each variant in a "
        "fresh process (temporary Prefect server start excluded from rounds/s, included in wall)"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.variants.split(","):
            db = str(Path(tmp) / f"{variant}.duckdb")
            proc = subprocess.run(
                [sys.executable, __file__, "--child", variant, "--days", str(args.days), "--db", db],
                capture_output=True,
                text=True,
                check=False,
            )
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print(f"{variant}: failed\n{proc.stderr[-2000:]}")
                continue
            res = json.loads(line.removeprefix("RESULT "))
            walls = res["walls"][1:] or res["walls"]  # round 1 includes the warm-up (and a server's start)
            rows.append((variant, res["rounds"], res["wall_s"], len(walls) / sum(walls), statistics.median(walls),
                         res["probe_phase_s"], res["ttft_p99_ms"], res["cpu_s"] / res["rounds"], res["db_mb"]))
    print(f"{'variant':<13} {'rounds':>6} {'wall s':>7} {'rounds/s':>8} {'median round s':>14} "
          f"{'probe phase s':>13} {'healthy TTFT p99 ms':>19} {'CPU s/round':>11} {'DB MB':>6}")
    for v, n, wall, rps, med, probe, p99, cpu, mb in rows:
        print(f"{v:<13} {n:>6} {wall:>7.1f} {rps:>8.2f} {med:>14.2f} {probe:>13.2f} {p99:>19.0f} {cpu:>11.2f} "
              f"{mb:>6.1f}")
    by = {r[0]: r for r in rows}
    for other in ("flow", "flow-default", "plain"):
        if "pipeline" in by and other in by:
            print(f"pipeline vs {other}: {by['pipeline'][3] / by[other][3]:.2f}x rounds/s, "
                  f"{by[other][2] / by['pipeline'][2]:.2f}x less wall")
    if "flow" in by and "plain" in by:
        print(f"orchestration cost per round (flow - plain, medians): {by['flow'][4] - by['plain'][4]:.2f} s")


if __name__ == "__main__":
    main()
