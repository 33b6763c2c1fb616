"""Exposure to a hard fault: today's confirmation rounds, then suspicion from OpenRouter's uptime, then from live
traffic through the router (docs/design.md "Suspicion"), on a compressed-clock history.

    python benchmarks/bench_exposure.py                    # 0.25 simulated day per variant (~15 min, 2 cores)
    python benchmarks/bench_exposure.py --days 1 --rpm 10  # a day; --days 7 is the simulated week (slow here)

Three variants build the same history (real `canary-round` flow runs, 30 simulated minutes apart, enforce mode,
a 1-hour ladder, each variant in a fresh process over the same generated fleet, on the simulator's shared step
clock):

* confirm  today's system: a round with a hard failure asks for a confirmation round 5 minutes later;
* uptime   + the watcher (flows/watch.py) every `--tick` simulated seconds reading OpenRouter's listing only
           (no traffic): an uptime drop is a suspicion -> a confirmation round of that endpoint at once;
* live     + `--rpm` streamed requests a minute on every endpoint through the real router (pinned, one route
           per endpoint, the canary's ignore list merged), whose per-endpoint counts the watcher reads too.

The fleet (written next to the databases): 8 healthy endpoints with transport noise (429s, cut streams,
mid-stream 502s, slow-but-passing first tokens), plus **live blips** (2 minutes of 502s) and **brief uptime dips**
(10 minutes at 55 %) at random minutes, a refusing positive control, 4 endpoints with a hard fault that live
traffic sees (an HTML page or undecodable bytes under HTTP 200: `protocol_violation`; OpenRouter's uptime dips 4
minutes after it starts) and 2 with a hard fault it cannot see (invalid JSON, a hidden content filter: the reply
looks fine to a router). Faults come back every 4 hours at a random minute (seeded) for 70 minutes.

Exposure of a window = its start -> the first round whose published ignore list holds the endpoint. False
suspensions = suspensions of a healthy endpoint, or of a faulty one outside [window start, window end + 1 h].
Extra probe spend = the variant's probe requests / the confirm variant's - 1. Printed: the distributions side by
side for the faults live traffic sees and for those it cannot, false suspensions, spend, and the ratios.

Measured (2026-12-03, 2 shared cores at load 8-9, seed 13,
`python benchmarks/bench_exposure.py --days 0.5 --tick 60 --rpm 10`), exposure in minutes, n = 12 windows the
router sees and 6 it cannot, each variant:

                                 confirm   uptime    live
    seen by live traffic median     15.1      9.0     7.9
                         p95        34.4      9.6     9.3
    not seen             median     13.0     13.0    13.0
                         p95        23.9     23.9    23.9
    false suspensions                  0        0       0
    probe requests                  2318     2467    2469   (+6.4 %, +6.5 %)
    suspicions cleared/confirmed/unconfirmed  -  8/12/2  7/12/3;  97,440 live requests; wall 157/199/944 s

The week, seed 13, 2 cores (2026-12-03; the live variant shared the machine with the others, and was stopped
after 2.54 simulated days: ~1 simulated hour per minute of wall there, as the router's traffic and a watcher look
every simulated minute), `--days 7 --tick 60 --rpm 10 --variants X --keep DIR` each; the live row was read from
its kept database up to its last complete round (`python benchmarks/exposure_from_db.py DIR/live/canary.duckdb`):

                                 confirm (7 d)  uptime (7 d)  live (2.54 d)
    seen by live traffic median       19.7          9.2          7.8      (n 168 / 168 / 60)
                         p95          34.0          9.9          9.7
    not seen             median       18.1         18.1         16.8      (n 84 / 84 / 30)
                         p95          33.2         33.2         32.7
    false suspensions                    0            0            0      (112 uptime dips, 168 live blips a week)
    probe requests                   32396        34614 (+6.8 %)          (+7.1 % over the same 2.54 days)
    suspicions cleared/confirmed/unconfirmed   -   82/168/43    26/63/24;  416,100 live requests; wall 665/1522 s

Faults no signal sees (a wrong JSON, a hidden filter) wait for the next scheduled round and its confirmation: a
30-minute interval bounds their exposure at ~35 minutes, whatever the watcher does. Faults a router cannot see are
caught by the probes alone, as before; `--tick 30` is the served watcher's interval.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HEALTHY = ("cerebras", "deepinfra/fp8", "deepinfra/turbo", "fireworks", "lambda/fp8", "parasail/fp8",
           "sambanova", "together")
CONTROL = "amazon-bedrock"
#: tag -> the hard fault it shows inside its windows (simulator/FLEET.md kinds); `live`: the router sees it.
FAULTY: dict[str, dict[str, Any]] = {
    "friendli": {"kind": "html_body"},
    "mistral": {"kind": "invalid_utf8"},
    "gmicloud/fp8": {"kind": "html_body"},
    "hyperbolic/fp8": {"kind": "invalid_utf8"},
    "nebius/fp8": {"kind": "invalid_json"},
    "novita": {"kind": "content_filter"},
}
LIVE_VISIBLE = ("friendli", "mistral", "gmicloud/fp8", "hyperbolic/fp8")
NOISE = (
    {"kind": "http_error_before_stream", "status": 429, "rate": 0.08},
    {"kind": "die_after_tokens", "tokens": 3, "rate": 0.04},
    {"kind": "midstream_error", "code": 502, "rate": 0.03},
    {"kind": "slow_first_token", "delay_s": 3.0, "keepalive_s": 1.0, "rate": 0.1},
)
SLOT = timedelta(hours=4)
FAULT_LENGTH = timedelta(minutes=70)
MAX_OFFSET_MIN = 60
#: OpenRouter's uptime_last_5m reflects a fault a few minutes after it starts.
UPTIME_LAG = timedelta(minutes=4)
BLIP_LENGTH = timedelta(minutes=2)
DIP_LENGTH = timedelta(minutes=10)
#: Live blips and uptime dips per healthy endpoint per simulated day.
BLIPS_PER_DAY = 3
DIPS_PER_DAY = 2
#: The TTFT threshold of the history (simulated seconds x 0.05 = 0.5 s) is raised to 1 s: on 2 shared cores
#: healthy first tokens were measured late now and then. TTFT is never hard, so this only removes machine noise.
TTFT_S = 1.0
#: A suspension of a faulty endpoint counts as caused by a window it falls in, up to this long after its end.
GRACE = timedelta(hours=1)
VARIANTS = ("confirm", "uptime", "live")


def _iso(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


def fault_windows(start: datetime, days: float, seed: int) -> list[tuple[str, datetime, datetime]]:
    """(tag, start, end) of every fault window: one per 4-hour slot and faulty tag, at a random minute."""
    rng = random.Random(seed)
    slots = max(1, int(days * 24 * 3600 // SLOT.total_seconds()))
    out = []
    for k in range(slots):
        for tag in FAULTY:
            begin = start + timedelta(minutes=40) + k * SLOT + timedelta(seconds=rng.uniform(0, MAX_OFFSET_MIN * 60))
            out.append((tag, begin.replace(microsecond=0), (begin + FAULT_LENGTH).replace(microsecond=0)))
    return out


def noise_windows(start: datetime, days: float, seed: int, per_day: int, length: timedelta
                  ) -> dict[str, list[tuple[datetime, datetime]]]:
    """Per healthy tag, `per_day` windows of `length` at random minutes (blips or dips)."""
    rng = random.Random(seed)
    n = max(1, round(days * per_day))
    out: dict[str, list[tuple[datetime, datetime]]] = {}
    for tag in HEALTHY:
        begins = sorted(start + timedelta(seconds=rng.uniform(0, days * 86400 - length.total_seconds()))
                        for _ in range(n))
        out[tag] = [(b.replace(microsecond=0), (b + length).replace(microsecond=0)) for b in begins]
    return out


def _toml_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def fleet_text(model: str, windows: Sequence[tuple[str, datetime, datetime]],
               blips: Mapping[str, Sequence[tuple[datetime, datetime]]],
               dips: Mapping[str, Sequence[tuple[datetime, datetime]]]) -> str:
    lines = ["# generated by benchmarks/bench_exposure.py", "[[models]]", f'id = "{model}"', ""]

    def endpoint(tag: str, faults: Iterable[tuple[Mapping[str, Any], Sequence[tuple[datetime, datetime]]]]) -> None:
        lines.extend(["[[models.endpoints]]", f'tag = "{tag}"', f'provider_name = "{tag.split("/")[0].title()}"'])
        for fault, spans in faults:
            lines.append("[[models.endpoints.faults]]")
            lines.extend(f"{k} = {_toml_value(v)}" for k, v in fault.items())
            for begin, end in spans:
                lines.extend(["[[models.endpoints.faults.windows]]", f'start = "{_iso(begin)}"',
                              f'end = "{_iso(end)}"'])
        lines.append("")

    for tag in HEALTHY:
        endpoint(tag, [*((f, ()) for f in NOISE),
                       ({"kind": "http_error_before_stream", "status": 502}, blips.get(tag, ())),
                       ({"kind": "uptime_dip", "uptime_5m": 55.0, "uptime_30m": 85.0}, dips.get(tag, ()))])
    endpoint(CONTROL, [({"kind": "refusal"}, ())])
    for tag, fault in FAULTY.items():
        spans = [(b, e) for t, b, e in windows if t == tag]
        faults: list[tuple[Mapping[str, Any], Sequence[tuple[datetime, datetime]]]] = [(fault, spans)]
        if tag in LIVE_VISIBLE:
            faults.append(({"kind": "uptime_dip", "uptime_5m": 40.0, "uptime_30m": 70.0},
                           [(b + UPTIME_LAG, e + UPTIME_LAG) for b, e in spans]))
        endpoint(tag, faults)
    return "\n".join(lines) + "\n"


# -- one variant (child process) ------------------------------------------------------------------------------
ROUTES_TIME_SCALE_BUDGET_S = 1.0  # the router's first-chunk budget at the history's time scale (5 s x 0.05, + noise)


def _routes(sim: Any, tags: Sequence[str], tmp: Path, db: str, publish_dir: str) -> Any:
    from demo.settings import DEMO_MODEL
    from router.routes_loading import parse_routes

    return parse_routes({
        "router": {"events_db": db, "events_path": str(tmp / "route_events.jsonl"),
                   "savings_path": str(tmp / "savings.jsonl"), "publish_dir": publish_dir, "flush_interval_s": 3600.0,
                   "first_chunk_budget_s": ROUTES_TIME_SCALE_BUDGET_S, "connect_timeout_s": 1.0},
        "route": [{"model": f"chat-{t}", "tier": [{"base_url": sim.base_url, "model": DEMO_MODEL,
                                                    "api_key_env": "BENCH_SIM_KEY",
                                                    "provider": {"only": [t], "allow_fallbacks": False}}]}
                  for t in tags],
    })


async def _traffic(base_url: str, tags: Sequence[str], per_tag: int) -> int:
    import asyncio

    import httpx

    sem = asyncio.Semaphore(16)

    async def one(client: httpx.AsyncClient, tag: str) -> None:
        async with sem:
            try:
                async with client.stream("POST", base_url + "/chat/completions", json={
                        "model": f"chat-{tag}", "stream": True, "max_tokens": 40,
                        "messages": [{"role": "user", "content": "Hello"}]}) as reply:
                    await reply.aread()
            except httpx.HTTPError:
                pass

    async with httpx.AsyncClient(timeout=30) as client:
        await asyncio.gather(*(one(client, t) for t in tags for _ in range(per_tag)))
    return len(tags) * per_tag


def run_variant(variant: str, days: float, db: str, fleet: str, rpm: int, tick_s: int) -> dict[str, Any]:
    """Rounds every 30 simulated minutes with their confirmation rounds; `uptime`: plus the watcher every
    `tick_s` (OpenRouter's listing only); `live`: plus `rpm` requests a minute per endpoint through the router."""
    import asyncio
    import contextlib
    import os

    from demo.history import HISTORY_START, ROUND_INTERVAL
    from demo.scenario import history_overrides
    from demo.settings import DEMO_MODEL, quiet_logs
    from demo.simulator_process import SharedStepClock, history_prefect, simulator_process
    from flows.round import canary_round
    from flows.watch import watch_once
    from router.events import flush_all
    from router.server import start_router
    from tasks import store
    from tasks.config import CanaryConfig
    from tasks.config_loading import apply_overrides

    tmp = Path(db).parent
    for stale in Path(tmp).glob(Path(db).name + "*"):
        stale.unlink()
    clock = SharedStepClock(HISTORY_START, Path(db + ".clock"))
    published: list[tuple[str, list[str]]] = []
    attempts = {"full": 0, "confirm": 0, "suspicion": 0}
    rounds = {"full": 0, "confirm": 0, "suspicion": 0}
    requests = 0
    t_wall = time.monotonic()
    with contextlib.ExitStack() as stack:
        stack.enter_context(quiet_logs())
        stack.enter_context(history_prefect(True))
        sim = stack.enter_context(simulator_process(fleet, time_scale=0.05, clock=clock))
        os.environ["OPENROUTER_API_KEY"] = sim.api_key
        overrides = history_overrides(sim.base_url, db, time_scale=0.05, ladder=("1h",),
                                      exclusions_file=str(tmp / "none.toml"), publish_dir=str(tmp / f"{variant}-pub"))
        overrides["ttft_s"] = TTFT_S
        cfg = apply_overrides(CanaryConfig(), overrides)
        tags = [*HEALTHY, *FAULTY]
        router = None
        if variant == "live":
            os.environ["BENCH_SIM_KEY"] = sim.api_key
            router = stack.enter_context(start_router(_routes(sim, tags, tmp, db, cfg.publish_dir),
                                                      env={"BENCH_SIM_KEY": sim.api_key}, clock=clock))
        last_ts = [HISTORY_START - timedelta(seconds=1)]

        def run(kind: str, **kw: Any) -> dict[str, Any]:
            ts = max(kw.pop("round_ts"), last_ts[0] + timedelta(seconds=1))
            if ts > clock.now():
                clock.advance(ts - clock.now())
            last_ts[0] = ts
            summary = canary_round(model=DEMO_MODEL, overrides=overrides, round_ts=ts, refresh_snapshot=False, **kw)
            if summary.get("status") == "complete":
                published.append((summary["round_id"].rpartition("@")[2], list(summary["ignore"])))
            attempts[kind] += summary.get("attempts", 0)
            rounds[kind] += 1
            return summary

        queue: list[tuple[datetime, str, dict[str, Any]]] = []

        def follow(summary: dict[str, Any], next_at: datetime) -> None:
            request = summary.get("confirmation")
            if request:
                due = datetime.fromisoformat(request["due"])
                if due < next_at:
                    queue.append((due, "confirm", request))

        total = int(round(days * 48))
        for n in range(total):
            now = HISTORY_START + n * ROUND_INTERVAL
            next_at = now + ROUND_INTERVAL
            if clock.now() < now:
                clock.advance(now - clock.now())
            queue.clear()
            follow(run("full", round_ts=now), next_at)
            t = now
            while True:
                t = t + timedelta(seconds=tick_s)
                if t >= next_at:
                    break
                if clock.now() < t:
                    clock.advance(t - clock.now())
                if router is not None:
                    requests += asyncio.run(_traffic(router.base_url, tags, max(1, rpm * tick_s // 60)))
                    flush_all(router.shell.batchers)
                if variant in ("uptime", "live"):
                    for entry in watch_once(cfg, clock.now()):
                        if entry["confirmation"]:
                            queue.append((clock.now(), "suspicion", entry["confirmation"]))
                queue.sort(key=lambda q: q[0])
                while queue and queue[0][0] <= t:
                    due, kind, request = queue.pop(0)
                    summary = run(kind, round_ts=due, only=request["only"], contracts=request["contracts"],
                                  confirms=request["confirms"])
                    follow(summary, next_at)
        with store.open_store(db, read_only=True) as con:
            suspends = con.execute("SELECT tag, decided_at FROM decisions WHERE action = 'suspend' "
                                   "ORDER BY decided_at").fetchall()
            suspicions = con.execute("SELECT status, count(*) FROM suspicions GROUP BY ALL").fetchall() \
                if variant != "confirm" else []
        clock.close()
    return {"rounds": rounds, "attempts": attempts, "requests": requests, "wall_s": time.monotonic() - t_wall,
            "published": published, "suspends": [(t, _iso(at)) for t, at in suspends],
            "suspicions": dict(suspicions)}


# -- analysis (pure) -----------------------------------------------------------------------------------------
def exposures(windows: Sequence[tuple[str, datetime, datetime]], published: Sequence[tuple[datetime, list[str]]]
              ) -> tuple[list[float], int]:
    """Minutes from each window's start to the first published list holding its tag; and windows missed
    (never excluded before the window ended + GRACE, or already excluded at its start)."""
    minutes: list[float] = []
    missed = 0
    for tag, begin, end in windows:
        before = [ignore for ts, ignore in published if ts < begin]
        if before and tag in before[-1]:
            missed += 1
            continue
        hit = next((ts for ts, ignore in published if ts >= begin and tag in ignore), None)
        if hit is None or hit > end + GRACE:
            missed += 1
        else:
            minutes.append((hit - begin).total_seconds() / 60)
    return minutes, missed


def false_suspensions(suspends: Sequence[tuple[str, datetime]], windows: Sequence[tuple[str, datetime, datetime]]
                      ) -> list[tuple[str, datetime]]:
    return [(tag, at) for tag, at in suspends
            if not any(t == tag and b <= at <= e + GRACE for t, b, e in windows)]


def describe(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    p95 = statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]
    return {"n": len(values), "median": statistics.median(values), "p95": p95, "min": min(values),
            "max": max(values)}


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=0.25, help="simulated days per variant (default 0.25; 7 = a week)")
    ap.add_argument("--seed", type=int, default=13, help="seed of the fault, blip and dip start times")
    ap.add_argument("--rpm", type=int, default=10, help="live requests a minute per endpoint (live variant)")
    ap.add_argument("--tick", type=int, default=60, help="simulated seconds between watcher looks (default 60)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="which variants to run (comma-separated)")
    ap.add_argument("--keep", help="keep the databases, the fleet and the raw results in this directory")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--fleet", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        result = run_variant(args.child, args.days, args.db, args.fleet, args.rpm, args.tick)
        print("RESULT " + json.dumps(result), flush=True)
        return
    from demo.history import HISTORY_START
    from demo.settings import DEMO_MODEL

    windows = fault_windows(HISTORY_START, args.days, args.seed)
    blips = noise_windows(HISTORY_START, args.days, args.seed + 1, BLIPS_PER_DAY, BLIP_LENGTH)
    dips = noise_windows(HISTORY_START, args.days, args.seed + 2, DIPS_PER_DAY, DIP_LENGTH)
    print(f"exposure benchmark: {args.days:g} simulated days per variant, {len(windows)} fault windows on "
          f"{len(FAULTY)} endpoints (seed {args.seed}), {len(HEALTHY)} noisy healthy endpoints with "
          f"{sum(map(len, blips.values()))} live blips and {sum(map(len, dips.values()))} uptime dips, a control; "
          f"live traffic {args.rpm} requests/min per endpoint, watcher every {args.tick} s")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(args.keep or scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        fleet = tmp / "exposure-fleet.toml"
        fleet.write_text(fleet_text(DEMO_MODEL, windows, blips, dips), encoding="utf-8")
        for variant in args.variants.split(","):
            (tmp / variant).mkdir(exist_ok=True)
            proc = subprocess.run(
                [sys.executable, __file__, "--child", variant, "--days", str(args.days), "--rpm", str(args.rpm),
                 "--tick", str(args.tick), "--db", str(tmp / variant / "canary.duckdb"), "--fleet", str(fleet)],
                capture_output=True, text=True, check=False,
            )
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print(f"{variant}: failed\n{proc.stderr[-3000:]}")
                sys.exit(1)
            results[variant] = json.loads(line.removeprefix("RESULT "))
            if args.keep:
                (tmp / f"{variant}.json").write_text(line.removeprefix("RESULT "), encoding="utf-8")
    report(results, windows)


def report(results: Mapping[str, Mapping[str, Any]], windows: Sequence[tuple[str, datetime, datetime]]) -> None:
    names = [v for v in VARIANTS if v in results]
    rows: dict[str, dict[str, Any]] = {}
    for v in names:
        res = results[v]
        published = [(_parse(ts), ignore) for ts, ignore in res["published"]]
        seen = exposures([w for w in windows if w[0] in LIVE_VISIBLE], published)
        unseen = exposures([w for w in windows if w[0] not in LIVE_VISIBLE], published)
        suspends = [(t, _parse(at)) for t, at in res["suspends"]]
        rows[v] = {"seen": describe(seen[0]), "seen_missed": seen[1], "unseen": describe(unseen[0]),
                   "unseen_missed": unseen[1], "false": false_suspensions(suspends, windows), "res": res,
                   "probes": sum(res["attempts"].values())}
    width = 14
    print("\n" + f"{'':<34}" + "".join(f"{v:>{width}}" for v in names))
    for label, key in (("faults live traffic sees", "seen"), ("faults it cannot see", "unseen")):
        print(f"exposure, minutes: {label}")
        for stat in ("n", "median", "p95", "max"):
            cells = [rows[v][key].get(stat) for v in names]
            text = ["-" if c is None else f"{c:.0f}" if stat == "n" else f"{c:.1f}" for c in cells]
            print(f"  {stat:<32}" + "".join(f"{t:>{width}}" for t in text))
        print(f"  {'missed windows':<32}" + "".join(f"{rows[v][key + '_missed']:>{width}}" for v in names))
    print(f"{'false suspensions':<34}" + "".join(f"{len(rows[v]['false']):>{width}}" for v in names))
    print(f"{'probe requests (all rounds)':<34}" + "".join(f"{rows[v]['probes']:>{width}}" for v in names))
    for kind in ("full", "confirm", "suspicion"):
        print(f"{'  rounds: ' + kind:<34}" + "".join(f"{rows[v]['res']['rounds'][kind]:>{width}}" for v in names))
    print(f"{'suspicions (by outcome)':<34}" + "".join(
        " " + f"{' '.join(f'{k[:4]}:{n}' for k, n in sorted(rows[v]['res']['suspicions'].items())) or '-':>{width + 6}}"
        for v in names))
    print(f"{'live requests through the router':<34}"
          + "".join(f"{rows[v]['res']['requests']:>{width}}" for v in names))
    print(f"{'wall, s':<34}" + "".join(f"{rows[v]['res']['wall_s']:>{width}.0f}" for v in names))
    for v in names:
        for tag, at in rows[v]["false"]:
            print(f"  false suspension ({v}): {tag} at {at:%m-%d %H:%M}")
    base = rows.get("confirm")
    if base is None:
        return
    print("\nratios against confirm (today's system), same run:")
    for v in names[1:]:
        b, a = base["seen"].get("median"), rows[v]["seen"].get("median")
        bp, ap = base["seen"].get("p95"), rows[v]["seen"].get("p95")
        extra = rows[v]["probes"] / base["probes"] - 1 if base["probes"] else float("nan")
        print(f"  {v}: median exposure x{(a / b if a and b else float('nan')):.2f}, p95 x"
              f"{(ap / bp if ap and bp else float('nan')):.2f}, extra probe spend {extra:+.1%}")
    live, up = rows.get("live"), rows.get("uptime")
    checks = []
    if live:
        med, p95 = live["seen"].get("median"), live["seen"].get("p95")
        checks.append(("with live traffic: median <= 8, p95 <= 15 min",
                       med is not None and p95 is not None and med <= 8 and p95 <= 15))
        checks.append(("live: extra probe spend <= 10 %", live["probes"] <= 1.10 * base["probes"]))
    if up:
        p95 = up["seen"].get("p95")
        checks.append(("without traffic (uptime only), faults OpenRouter's uptime shows: p95 <= 20 min",
                       p95 is not None and p95 <= 20))
        p95 = up["unseen"].get("p95")
        checks.append(("without traffic, faults neither signal shows (probes alone): p95 <= 20 min",
                       p95 is not None and p95 <= 20))
    checks.append(("0 false suspensions in every variant", not any(rows[v]["false"] for v in names)))
    for text, ok in checks:
        print(f"target {text}: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
