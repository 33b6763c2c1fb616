"""Exposure to a hard fault: today's confirmation rounds, then suspicion from OpenRouter's uptime, from live
traffic through the router, and from the router's judged answers (docs/design.md "Suspicion"), on a
compressed-clock history.

    python benchmarks/bench_exposure.py                       # 0.25 simulated day per variant
    python benchmarks/bench_exposure.py --days 7 --day 3 --keep DIR   # day 3 of the week, kept in DIR
    python benchmarks/bench_exposure.py --days 7 --merge DIR  # the week's table from the parts kept in DIR

Four variants build the same history (real `canary-round` flow runs, 30 simulated minutes apart, enforce mode,
a 1-hour ladder, each variant in a fresh process over the same generated fleet, on the simulator's shared step
clock):

* confirm  today's system: a round with a hard failure asks for a confirmation round 5 minutes later;
* uptime   + the watcher (tasks/watch/loop.py, one look every `--tick` simulated seconds) reading OpenRouter's
           listing only (no traffic): an uptime drop is a suspicion -> a confirmation round of that endpoint;
* live     + `--rpm` plain streamed chat requests a minute on every endpoint through the real router (pinned, one
           route per endpoint, the canary's ignore list merged), whose per-endpoint counts the watcher reads too;
* quality  + the same rate of requests, a third of them plain chat, a third calling tools and a third asking for
           structured output, half of each streamed: the router judges every answer and the watcher reads the
           judged answers per endpoint and class too (`live_quality`, relative to the peers).

The quality traffic comes from four clients beside the chat one: an agent whose tool every provider calls
correctly, one whose own tool schema every provider sometimes fails (`roll_dice` asks for a multiple of 3 that
no model is told about: ~2/3 of its calls fail everywhere), an extractor whose JSON schema every provider meets,
and one whose schema every provider sometimes fails (an even `score`: ~1/2). That is noise the peer rule must
ignore: on every endpoint a third of the tool calls and a quarter of the structured answers fail, always.

The fleet (written next to the databases): 8 healthy endpoints with transport noise (429s, cut streams,
mid-stream 502s, slow-but-passing first tokens), plus **live blips** (2 minutes of 502s) and **brief uptime dips**
(10 minutes at 55 %) at random minutes, a refusing positive control, and 7 endpoints with a hard fault inside
their windows: 2 that live traffic sees (an HTML page or undecodable bytes under HTTP 200: `protocol_violation`;
OpenRouter's uptime dips 4 minutes after it starts), 4 that only a judge of the answer sees (tool calls breaking
the tool's schema or naming an unknown tool, structured output that does not parse or breaks its schema: an
HTTP 200 with a well-formed stream) and 1 no signal sees (a hidden content filter). Faults come back every 4
hours at a random minute (seeded) for 70 minutes.

Exposure of a window = its start -> the first round whose published ignore list holds the endpoint. False
suspensions = suspensions of a healthy endpoint, or of a faulty one outside [window start, window end + 1 h].
Extra probe spend = the variant's probe requests / the confirm variant's - 1.

**Parts.** A week does not run in one sitting on 2 shared cores (the quality variant: ~1 simulated hour per 3 wall
minutes). `--day K` runs simulated day K of the `--days` history only, starting `WARMUP` earlier (so the policy's
streaks, the 1-hour ladder and the watcher's cooldowns are in their steady state when the day begins; the
cleared-rate memory of the day before is all that is lost), and counts only what starts inside the day: the
windows, the rounds' probe requests, the suspensions, the suspicions, the requests. Each part writes
`DIR/<variant>-day<K>.json` (`--keep DIR`); `--merge DIR` reads every part in DIR and prints the table as one run.

**Measured** (seed 13, 12 requests/min per endpoint, watcher tick 30 s; 2 shared cores):

    python benchmarks/bench_exposure.py --days 7 --variants confirm --keep DIR                     # 1,273 s
    python benchmarks/bench_exposure.py --days 7 --tick 30 --day K --variants quality --keep DIR   # ~55 min a day
    python benchmarks/bench_exposure.py --days 7 --merge DIR

| exposure, minutes (median / p95 / max) | confirm, 7 days | quality, 7 days |
| --- | --- | --- |
| faults live traffic sees (n 84 / 84) | 21.2 / 33.7 / 34.9 | 7.5 / 8.3 / 9.5 |
| faults only a judge sees (n 168 / 168) | 18.8 / 33.7 / 34.9 | 7.1 / 8.2 / 8.9 |
| faults no signal sees (n 42 / 42) | 18.9 / 34.0 / 34.9 | 18.9 / 34.0 / 34.9 |
| false suspensions | 0 | 0 |
| probe requests | 33,613 | 35,206 (+4.7 %) |

The quality week in seven parts (day 0 with `--tick 60` and the router before its encoding fix, days 1-6 with
`--tick 30`; 42-104 min wall a day, 28,330 s in all, on a machine doing other work): 1,779,840 requests through the
router, 1,266,430 answers judged, 0 dropped, 0 judge errors; 230 confirmation rounds and 371 suspicion rounds
against confirm's 112 and 0. Suspicions: live_quality tools 84 and structured 84 confirmed (2 cleared), encoding 36
and empty 1 confirmed; live_failure_rate 43 confirmed, 5 unconfirmed; uptime_drop 5 confirmed, 68 cleared, 52
unconfirmed. Every target holds: judged and live faults median <= 8 and p95 <= 15 min, extra probe spend <= 10 %,
0 false suspensions. A fault no signal sees waits for the scheduled round and its confirmation, as before. The
peer rule's replay over day 0's database
(`python benchmarks/exposure_from_db.py DIR/quality-day0/canary.duckdb --days 7 --seed 13 --peer-rule`): 0 quality
suspicions of endpoints without a fault as configured, 62 without the peer margin (58 tools, 4 structured).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HEALTHY = ("cerebras", "deepinfra/fp8", "deepinfra/turbo", "fireworks", "lambda/fp8", "parasail/fp8",
           "sambanova", "together")
CONTROL = "amazon-bedrock"
#: tag -> the hard fault it shows inside its windows (simulator/FLEET.md kinds).
FAULTY: dict[str, dict[str, Any]] = {
    "friendli": {"kind": "html_body"},
    "mistral": {"kind": "invalid_utf8"},
    "groq": {"kind": "schema_violating_args"},
    "crusoe": {"kind": "unknown_tool"},
    "nebius/fp8": {"kind": "invalid_json"},
    "baseten": {"kind": "schema_violation"},
    "novita": {"kind": "content_filter"},
}
#: Which signal can see each faulty endpoint's fault: the attempt fails (live traffic), only a judge of the answer
#: sees it (quality traffic), or nothing does (the probes alone).
LIVE_VISIBLE = ("friendli", "mistral")
JUDGE_VISIBLE = ("groq", "crusoe", "nebius/fp8", "baseten")
FAULT_CLASSES = (("live", "faults live traffic sees", LIVE_VISIBLE),
                 ("judged", "faults only a judge of the answer sees", JUDGE_VISIBLE),
                 ("unseen", "faults no signal sees", tuple(t for t in FAULTY if t not in LIVE_VISIBLE + JUDGE_VISIBLE)))
NOISE = (
    {"kind": "http_error_before_stream", "status": 429, "rate": 0.08},
    {"kind": "die_after_tokens", "tokens": 3, "rate": 0.04},
    {"kind": "midstream_error", "code": 502, "rate": 0.03},
    {"kind": "slow_first_token", "delay_s": 3.0, "keepalive_s": 1.0, "rate": 0.1},
)
SLOT = timedelta(hours=4)
FAULT_LENGTH = timedelta(minutes=70)
MAX_OFFSET_MIN = 60
#: OpenRouter's uptime_last_5m reflects a fault a few minutes after it starts (an attempt-level fault only: an
#: answer that breaks its tool's schema is a success to OpenRouter).
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
#: A part (`--day K`) starts this long before its day (module docstring "Parts").
WARMUP = timedelta(hours=2)
VARIANTS = ("confirm", "uptime", "live", "quality")
TRAFFIC = {"live": "plain", "quality": "mixed"}


def _iso(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


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


# -- the clients ---------------------------------------------------------------------------------------------
def _function(name: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": f"{name.replace('_', ' ')}.",
                                             "parameters": {"type": "object", "properties": dict(properties),
                                                            "required": list(properties)}}}


def _json_schema(name: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": {
        "type": "object", "properties": dict(properties), "required": list(properties),
        "additionalProperties": False}}}


@dataclass(frozen=True)
class Client:
    """One kind of request: its prompt and what it asks for besides (`tools`, `response_format`)."""

    name: str
    prompt: str
    extra: Mapping[str, Any]


CHAT = Client("chat", "Hello", {})
#: The quality variant's request mix per endpoint, in order (a tick's requests cycle through it; the second pass
#: of each tick is not streamed).
MIXED = (
    CHAT,
    Client("agent", "Please lookup the weather in Lisbon.", {"tools": [_function("lookup_weather", {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}})]}),
    Client("dice", "Please roll the dice for the next scene.", {"tools": [_function("roll_dice", {
        "sides": {"type": "integer", "minimum": 1, "maximum": 100, "multipleOf": 3}})]}),  # its own bug: ~2/3 fail
    CHAT,
    Client("extract", "Describe the innkeeper as JSON.", {"response_format": _json_schema("profile", {
        "name": {"type": "string"}, "mood": {"type": "string", "enum": ["calm", "angry", "merry"]}})}),
    Client("score", "Score the innkeeper as JSON.", {"response_format": _json_schema("score", {
        "name": {"type": "string"}, "score": {"type": "integer", "minimum": 0, "maximum": 100,
                                              "multipleOf": 2}})}),  # its own bug: ~1/2 fail
)


def tick_requests(kind: str, per_tag: int) -> list[tuple[Client, bool]]:
    """The requests one endpoint gets in one tick: (client, streamed). `plain`: chat, streamed; `mixed`: the
    clients of MIXED in turn, the first pass streamed, the second not, and so on."""
    if kind == "plain":
        return [(CHAT, True)] * per_tag
    return [(MIXED[i % len(MIXED)], (i // len(MIXED)) % 2 == 0) for i in range(per_tag)]


# -- one variant (child process) ------------------------------------------------------------------------------
ROUTES_TIME_SCALE_BUDGET_S = 1.0  # the router's first-chunk budget at the history's time scale (5 s x 0.05, + noise)


def _routes(sim: Any, tags: Sequence[str], tmp: Path, db: str, publish_dir: str) -> Any:
    from provider_canary.demo.settings import DEMO_MODEL
    from provider_canary.router.routes_loading import parse_routes

    return parse_routes({
        "router": {"events_db": db, "events_path": str(tmp / "route_events.jsonl"),
                   "savings_path": str(tmp / "savings.jsonl"), "publish_dir": publish_dir, "flush_interval_s": 3600.0,
                   "first_chunk_budget_s": ROUTES_TIME_SCALE_BUDGET_S, "connect_timeout_s": 1.0},
        "route": [{"model": f"chat-{t}", "tier": [{"base_url": sim.base_url, "model": DEMO_MODEL,
                                                    "api_key_env": "BENCH_SIM_KEY",
                                                    "provider": {"only": [t], "allow_fallbacks": False}}]}
                  for t in tags],
    })


async def _traffic(base_url: str, tags: Sequence[str], requests: Sequence[tuple[Client, bool]], seed: str) -> int:
    """Each of `requests` on every tag, 16 at a time; each request with its own `seed` (the simulator's answers
    vary with it). Answers are read whole; failures are the router's to count, not the client's."""
    import asyncio

    import httpx

    sem = asyncio.Semaphore(16)
    rng = random.Random(seed)

    async def one(client: httpx.AsyncClient, tag: str, who: Client, stream: bool, n: int) -> None:
        body = {"model": f"chat-{tag}", "stream": stream, "max_tokens": 40, "seed": n,
                "messages": [{"role": "user", "content": who.prompt}], **who.extra}
        async with sem:
            try:
                if stream:
                    async with client.stream("POST", base_url + "/chat/completions", json=body) as reply:
                        await reply.aread()
                else:
                    await client.post(base_url + "/chat/completions", json=body)
            except httpx.HTTPError:
                pass

    async with httpx.AsyncClient(timeout=30) as client:
        await asyncio.gather(*(one(client, t, who, stream, rng.randrange(2**31))
                               for t in tags for who, stream in requests))
    return len(tags) * len(requests)


def _judge_caught_up(router: Any) -> None:
    """Wait until the router's judge has judged every streamed answer of the tick (it works off the client's
    path): then the flush that follows holds them, as a real router's would a second later."""
    import httpx

    health = router.base_url.removesuffix("/v1") + "/healthz"
    deadline = time.monotonic() + 30
    while httpx.get(health, timeout=10).json()["judge"]["queued"] and time.monotonic() < deadline:
        time.sleep(0.01)
    httpx.get(health, timeout=10)  # the answer being judged when the queue emptied is done by the next request


@dataclass(frozen=True)
class Span:
    """What a child simulates ([begin, until)) and what it counts (from `counts_from`)."""

    begin: datetime
    until: datetime
    counts_from: datetime


def run_variant(variant: str, span: Span, db: str, fleet: str, rpm: int, tick_s: int) -> dict[str, Any]:
    """Rounds every 30 simulated minutes with their confirmation rounds; `uptime`: plus the watcher every
    `tick_s` (OpenRouter's listing only); `live`, `quality`: plus `rpm` requests a minute per endpoint through
    the router (plain, or the quality mix)."""
    import asyncio
    import contextlib

    from flows.round import canary_round
    from flows.watch import watch_once
    from provider_canary.demo.history import HISTORY_START, ROUND_INTERVAL
    from provider_canary.demo.scenario import history_overrides
    from provider_canary.demo.settings import DEMO_MODEL, quiet_logs
    from provider_canary.demo.simulator_process import SharedStepClock, history_prefect, simulator_process
    from provider_canary.router.route_events import flush_all
    from provider_canary.router.server import start_router
    from tasks import store
    from tasks.config import CanaryConfig
    from tasks.config.loading import apply_overrides

    tmp = Path(db).parent
    for stale in Path(tmp).glob(Path(db).name + "*"):
        stale.unlink()
    clock = SharedStepClock(span.begin, Path(db + ".clock"))
    published: list[tuple[str, list[str]]] = []
    rounds: list[tuple[str, str, int]] = []  # (round_ts, kind, probe requests)
    requests = 0
    phases: dict[str, float] = {}  # wall seconds per phase: where a variant's time goes
    t_wall = time.monotonic()

    def timed(phase: str, started: float) -> None:
        phases[phase] = phases.get(phase, 0.0) + time.monotonic() - started
    with contextlib.ExitStack() as stack:
        stack.enter_context(quiet_logs())
        stack.enter_context(history_prefect(True))
        sim = stack.enter_context(simulator_process(fleet, time_scale=0.05, clock=clock))
        os.environ["OPENROUTER_API_KEY"] = sim.api_key
        (tmp / "none.toml").write_text("", encoding="utf-8")  # no built-in exclusions (a missing file is an error)
        overrides = history_overrides(sim.base_url, db, time_scale=0.05, ladder=("1h",),
                                      exclusions_file=str(tmp / "none.toml"), publish_dir=str(tmp / f"{variant}-pub"))
        overrides["ttft_s"] = TTFT_S
        cfg = apply_overrides(CanaryConfig(), overrides)
        tags = [*HEALTHY, *FAULTY]
        router = None
        traffic = TRAFFIC.get(variant)
        if traffic is not None:
            os.environ["BENCH_SIM_KEY"] = sim.api_key
            router = stack.enter_context(start_router(_routes(sim, tags, tmp, db, cfg.publish_dir),
                                                      env={"BENCH_SIM_KEY": sim.api_key}, clock=clock))
        last_ts = [span.begin - timedelta(seconds=1)]

        def run(kind: str, **kw: Any) -> dict[str, Any]:
            ts = max(kw.pop("round_ts"), last_ts[0] + timedelta(seconds=1))
            if ts > clock.now():
                clock.advance(ts - clock.now())
            last_ts[0] = ts
            started = time.monotonic()
            summary = canary_round(model=DEMO_MODEL, overrides=overrides, round_ts=ts, refresh_snapshot=False, **kw)
            phases[f"{kind} rounds"] = phases.get(f"{kind} rounds", 0.0) + time.monotonic() - started
            if summary.get("status") == "complete":
                published.append((summary["round_id"].rpartition("@")[2], list(summary["ignore"])))
            rounds.append((_iso(ts), kind, summary.get("attempts", 0)))
            return summary

        queue: list[tuple[datetime, str, dict[str, Any]]] = []

        def follow(summary: dict[str, Any], next_at: datetime) -> None:
            request = summary.get("confirmation")
            if request:
                due = datetime.fromisoformat(request["due"])
                if due < next_at:
                    queue.append((due, "confirm", request))

        first = int((span.begin - HISTORY_START) / ROUND_INTERVAL)
        last = int((span.until - HISTORY_START) / ROUND_INTERVAL)
        for n in range(first, last):
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
                if router is not None and traffic is not None:
                    batch = tick_requests(traffic, max(1, rpm * tick_s // 60))
                    started = time.monotonic()
                    sent = asyncio.run(_traffic(router.base_url, tags, batch, seed=f"{_iso(t)}|{variant}"))
                    requests += sent if t >= span.counts_from else 0
                    timed("traffic", started)
                    started = time.monotonic()
                    _judge_caught_up(router)
                    flush_all(router.shell.batchers)
                    timed("judge and flush", started)
                if variant != "confirm":
                    started = time.monotonic()
                    looks = watch_once(cfg, clock.now())
                    timed("watcher looks", started)
                    for entry in looks:
                        if entry["confirmation"]:
                            queue.append((clock.now(), "suspicion", entry["confirmation"]))
                queue.sort(key=lambda q: q[0])
                while queue and queue[0][0] <= t:
                    due, kind, request = queue.pop(0)
                    summary = run(kind, round_ts=due, only=request["only"], contracts=request["contracts"],
                                  confirms=request["confirms"])
                    follow(summary, next_at)
        judge = router.shell.judge.health() if router is not None else {}  # answers judged, dropped, failed
        with store.open_store(db, read_only=True) as con:
            suspends = con.execute("SELECT tag, decided_at FROM decisions WHERE action = 'suspend' "
                                   "ORDER BY decided_at").fetchall()
            suspicions = con.execute("SELECT detected_at, tag, signal, coalesce(quality, ''), status FROM suspicions "
                                     "ORDER BY detected_at").fetchall() if variant != "confirm" else []
        clock.close()
    return {"variant": variant, "span": [_iso(span.begin), _iso(span.until), _iso(span.counts_from)],
            "rpm": rpm, "tick": tick_s, "rounds": rounds, "requests": requests, "wall_s": time.monotonic() - t_wall,
            "phases": {k: round(v, 1) for k, v in phases.items()}, "judge": judge,
            "published": published, "suspends": [(t, _iso(at)) for t, at in suspends],
            "suspicions": [(_iso(at), tag, signal, quality, status) for at, tag, signal, quality, status in suspicions]}


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


@dataclass
class Tally:
    """One variant's figures over the parts read so far (module docstring "Parts": each counts its own day)."""

    minutes: dict[str, list[float]]
    missed: dict[str, int]
    false: list[tuple[str, datetime]]
    probes: int
    rounds: dict[str, int]
    suspicions: dict[str, int]  # "<signal>[:<quality>] <status>" -> count
    requests: int
    wall_s: float
    days: float
    spans: list[tuple[datetime, datetime]]  # the simulated time counted


def tally(parts: Sequence[Mapping[str, Any]], windows: Sequence[tuple[str, datetime, datetime]],
          within: Sequence[tuple[datetime, datetime]] | None = None) -> Tally:
    """Merge the parts of one variant: each part's windows, rounds, suspensions and suspicions are those that
    start inside its counted span (and inside `within`, when given: the same days as another variant's),
    judged against that part's own published lists."""
    t = Tally({k: [] for k, _, _ in FAULT_CLASSES}, {k: 0 for k, _, _ in FAULT_CLASSES}, [], 0,
              {"full": 0, "confirm": 0, "suspicion": 0}, {}, 0, 0.0, 0.0, [])
    for part in parts:
        _, until, counts_from = (_parse(x) for x in part["span"])

        def counted(ts: datetime, lo: datetime = counts_from, hi: datetime = until) -> bool:
            return lo <= ts < hi and (within is None or any(a <= ts < b for a, b in within))

        published = [(_parse(ts), ignore) for ts, ignore in part["published"]]
        for key, _, tags in FAULT_CLASSES:
            minutes, missed = exposures([w for w in windows if w[0] in tags and counted(w[1])], published)
            t.minutes[key].extend(minutes)
            t.missed[key] += missed
        t.false.extend(false_suspensions([(tag, _parse(at)) for tag, at in part["suspends"] if counted(_parse(at))],
                                         windows))
        for ts, kind, attempts in part["rounds"]:
            if counted(_parse(ts)):
                t.probes += attempts
                t.rounds[kind] += 1
        for at, _, signal, quality, status in part["suspicions"]:
            if counted(_parse(at)):
                key = f"{signal}:{quality} {status}" if quality else f"{signal} {status}"
                t.suspicions[key] = t.suspicions.get(key, 0) + 1
        t.requests += part["requests"]
        t.wall_s += part["wall_s"]
        t.days += (until - counts_from).total_seconds() / 86400
        t.spans.append((counts_from, until))
    return t


def report(results: Mapping[str, Sequence[Mapping[str, Any]]], windows: Sequence[tuple[str, datetime, datetime]]
           ) -> None:
    names = [v for v in VARIANTS if v in results]
    rows = {v: tally(results[v], windows) for v in names}
    width = 14
    print("\n" + f"{'':<34}" + "".join(f"{v:>{width}}" for v in names))
    print(f"{'simulated days':<34}" + "".join(f"{rows[v].days:>{width}.2f}" for v in names))
    for key, label, _ in FAULT_CLASSES:
        print(f"exposure, minutes: {label}")
        stats = {v: describe(rows[v].minutes[key]) for v in names}
        for stat in ("n", "median", "p95", "max"):
            cells = [stats[v].get(stat) for v in names]
            text = ["-" if c is None else f"{c:.0f}" if stat == "n" else f"{c:.1f}" for c in cells]
            print(f"  {stat:<32}" + "".join(f"{x:>{width}}" for x in text))
        print(f"  {'missed windows':<32}" + "".join(f"{rows[v].missed[key]:>{width}}" for v in names))
    print(f"{'false suspensions':<34}" + "".join(f"{len(rows[v].false):>{width}}" for v in names))
    print(f"{'probe requests (all rounds)':<34}" + "".join(f"{rows[v].probes:>{width}}" for v in names))
    for kind in ("full", "confirm", "suspicion"):
        print(f"{'  rounds: ' + kind:<34}" + "".join(f"{rows[v].rounds[kind]:>{width}}" for v in names))
    print(f"{'live requests through the router':<34}" + "".join(f"{rows[v].requests:>{width}}" for v in names))
    print(f"{'wall, s':<34}" + "".join(f"{rows[v].wall_s:>{width}.0f}" for v in names))
    for v in names:
        judges = [p["judge"] for p in results[v] if p.get("judge")]
        if judges:
            print(f"router's judge ({v}): " + ", ".join(f"{k} {sum(j[k] for j in judges):g}"
                                                     for k in ("judged", "dropped", "errors")))
        if rows[v].suspicions:
            print(f"suspicions ({v}): " + ", ".join(f"{k} {n}" for k, n in sorted(rows[v].suspicions.items())))
        for tag, at in rows[v].false:
            print(f"  false suspension ({v}): {tag} at {at:%m-%d %H:%M}")
    if "confirm" not in rows:
        return
    bases = {v: tally(results["confirm"], windows, within=rows[v].spans) for v in names}
    print("\nratios against confirm (today's system) over the same simulated days:")
    for v in names[1:]:
        base, said = bases[v], []
        for key, _, _ in FAULT_CLASSES[:2]:
            b, a = describe(base.minutes[key]), describe(rows[v].minutes[key])
            said.append(f"{key}: median x{_ratio(a.get('median'), b.get('median'))}, "
                        f"p95 x{_ratio(a.get('p95'), b.get('p95'))}")
        extra = rows[v].probes / base.probes - 1 if base.probes else float("nan")
        print(f"  {v} ({rows[v].days:g} d): {'; '.join(said)}; probe requests {rows[v].probes} / {base.probes}, "
              f"extra probe spend {extra:+.1%}")
    for target, ok in checks(rows, bases):
        print(f"target {target}: {'met' if ok else 'NOT met'}")


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def checks(rows: Mapping[str, Tally], bases: Mapping[str, Tally]) -> list[tuple[str, bool]]:
    """The targets (issues 22 and 29) against the measured rows; `bases`: per variant, the confirm variant over
    the same simulated days."""
    out: list[tuple[str, bool]] = []

    def within(v: str, key: str, median: float, p95: float) -> bool:
        d = describe(rows[v].minutes[key])
        return "median" in d and d["median"] <= median and d["p95"] <= p95

    def spend(v: str) -> bool:
        return rows[v].probes <= 1.10 * bases[v].probes

    if "live" in rows:
        out.append(("live: faults live traffic sees, median <= 8, p95 <= 15 min", within("live", "live", 8, 15)))
        out.append(("live: extra probe spend <= 10 %", spend("live")))
    if "quality" in rows:
        out.append(("quality: faults only a judge sees, median <= 8, p95 <= 15 min",
                    within("quality", "judged", 8, 15)))
        out.append(("quality: faults live traffic sees, median <= 8, p95 <= 15 min",
                    within("quality", "live", 8, 15)))
        out.append(("quality: extra probe spend <= 10 %", spend("quality")))
    if "uptime" in rows:
        out.append(("uptime: faults OpenRouter's uptime shows, p95 <= 20 min",
                    "p95" in (d := describe(rows["uptime"].minutes["live"])) and d["p95"] <= 20))
    out.append(("0 false suspensions in every variant", not any(r.false for r in rows.values())))
    return out


# -- the parent: parts, merge ---------------------------------------------------------------------------------
def spans(start: datetime, days: float, day: int | None) -> Span:
    """The whole history, or simulated day `day` of it with WARMUP before it (never before the history)."""
    if day is None:
        return Span(start, start + timedelta(days=days), start)
    begin = start + timedelta(days=day)
    if day < 0 or begin >= start + timedelta(days=days):
        raise SystemExit(f"bench_exposure: --day {day} is outside the {days:g}-day history")
    return Span(max(start, begin - WARMUP), min(begin + timedelta(days=1), start + timedelta(days=days)), begin)


def read_parts(dirs: Sequence[Path]) -> dict[str, list[dict[str, Any]]]:
    """Every part result (`<variant>[-day<K>].json`) in `dirs`, per variant, in span order; two parts of one
    variant counting the same time are refused."""
    out: dict[str, list[dict[str, Any]]] = {}
    for d in dirs:
        for path in sorted(Path(d).glob("*.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(doc, dict) and doc.get("variant") in VARIANTS:
                out.setdefault(doc["variant"], []).append(doc)
    for variant, parts in out.items():
        parts.sort(key=lambda p: p["span"][2])
        for a, b in zip(parts, parts[1:], strict=False):
            if _parse(b["span"][2]) < _parse(a["span"][1]):
                raise SystemExit(f"bench_exposure: two {variant} parts count the same time ({a['span']}, {b['span']})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=0.25, help="simulated days of the history (default 0.25; 7 = a week)")
    ap.add_argument("--day", type=int, help="run only this simulated day (0-based) of the history (a part)")
    ap.add_argument("--seed", type=int, default=13, help="seed of the fault, blip and dip start times")
    ap.add_argument("--rpm", type=int, default=12, help="requests a minute per endpoint (live, quality variants)")
    ap.add_argument("--tick", type=int, default=60, help="simulated seconds between watcher looks (default 60)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="which variants to run (comma-separated)")
    ap.add_argument("--keep", help="keep the databases, the fleet and each part's result in this directory")
    ap.add_argument("--merge", nargs="+", metavar="DIR", help="print the table of the parts kept in these directories")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--span", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--fleet", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        begin, until, counts_from = (_parse(x) for x in args.span.split(","))
        result = run_variant(args.child, Span(begin, until, counts_from), args.db, args.fleet, args.rpm, args.tick)
        print("RESULT " + json.dumps(result), flush=True)
        return
    from provider_canary.demo.history import HISTORY_START
    from provider_canary.demo.settings import DEMO_MODEL

    windows = fault_windows(HISTORY_START, args.days, args.seed)
    if args.merge:
        parts = read_parts([Path(d) for d in args.merge])
        other = {(p["seed"], p["days"]) for ps in parts.values() for p in ps} - {(args.seed, args.days)}
        if other:
            raise SystemExit(f"bench_exposure: parts of another history (seed, days) {sorted(other)}: pass the "
                             "--seed and --days they ran with")
        for variant, ps in sorted(parts.items()):
            print(f"{variant}: {len(ps)} part(s), rpm/tick {sorted({(p['rpm'], p['tick']) for p in ps})}, "
                  + ", ".join(f"{p['span'][2][:10]} ({p['wall_s']:.0f} s)" for p in ps))
        report(parts, windows)
        return
    blips = noise_windows(HISTORY_START, args.days, args.seed + 1, BLIPS_PER_DAY, BLIP_LENGTH)
    dips = noise_windows(HISTORY_START, args.days, args.seed + 2, DIPS_PER_DAY, DIP_LENGTH)
    span = spans(HISTORY_START, args.days, args.day)
    print(f"exposure benchmark: {args.days:g} simulated days"
          + (f", day {args.day} ({_iso(span.counts_from)}, from {_iso(span.begin)})" if args.day is not None else "")
          + f", {len(windows)} fault windows on {len(FAULTY)} endpoints (seed {args.seed}), {len(HEALTHY)} noisy "
          f"healthy endpoints with {sum(map(len, blips.values()))} live blips and {sum(map(len, dips.values()))} "
          f"uptime dips, a control; traffic {args.rpm} requests/min per endpoint, watcher every {args.tick} s",
          flush=True)
    results: dict[str, list[dict[str, Any]]] = {}
    suffix = f"-day{args.day}" if args.day is not None else ""
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(args.keep or scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        fleet = tmp / f"exposure-fleet-{args.seed}-{args.days:g}d.toml"
        fresh = tmp / f".{fleet.name}.{os.getpid()}"  # parts run side by side share the file: written whole
        fresh.write_text(fleet_text(DEMO_MODEL, windows, blips, dips), encoding="utf-8")
        os.replace(fresh, fleet)
        for variant in args.variants.split(","):
            (tmp / (variant + suffix)).mkdir(exist_ok=True)
            proc = subprocess.run(
                [sys.executable, __file__, "--child", variant, "--rpm", str(args.rpm), "--tick", str(args.tick),
                 "--span", ",".join(_iso(x) for x in (span.begin, span.until, span.counts_from)),
                 "--db", str(tmp / (variant + suffix) / "canary.duckdb"), "--fleet", str(fleet)],
                capture_output=True, text=True, check=False,
            )
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print(f"{variant}: failed\n{proc.stderr[-3000:]}")
                sys.exit(1)
            doc = json.loads(line.removeprefix("RESULT "))
            doc.update(seed=args.seed, days=args.days)
            results[variant] = [doc]
            print(f"{variant}{suffix}: {doc['wall_s']:.0f} s", flush=True)
            if args.keep:
                (tmp / f"{variant}{suffix}.json").write_text(json.dumps(doc), encoding="utf-8")
    report(results, windows)


if __name__ == "__main__":
    main()
