"""Replay a synthetic year of round statuses and compare what-if settings.

    python benchmarks/bench_replay.py [--rounds 17520] [--endpoints 15] [--seed 7]

One model, 15 endpoints, one round every 30 minutes for a year (17,520 rounds = 262,800 status lines).
The fleet mixes healthy hosts (rare fails, some transport noise), one flaky host (independent fails), two
hosts with recurring multi-day fault episodes and one host that is often unreachable. The history is
generated in memory as JSON lines, so parsing is timed too. Prints rows/s for parse and for the policy
fold, then the summary of the baseline (the default config, enforce mode) against a few variants.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.config import CanaryConfig  # noqa: E402
from tasks.config.loading import variant  # noqa: E402
from tasks.core.replay import replay  # noqa: E402
from tasks.core.replay_input import parse_replay  # noqa: E402
from tasks.core.replay_summary import format_summaries, summarize, what_if  # noqa: E402
from tasks.core.types import Mode  # noqa: E402

MODEL = "meta-llama/llama-3.3-70b-instruct"
START = datetime(2026, 1, 1, tzinfo=UTC)
VARIANTS = [{"fail_rounds": "3"}, {"restore_rounds": "4"}, {"min_hosts": "13"}]


def endpoint_profiles(n: int) -> list[tuple[str, float, float, str]]:
    """(tag, fail probability, transport probability, kind) per endpoint."""
    profiles = [(f"host{i:02d}", 0.002, 0.02, "healthy") for i in range(n)]
    if n >= 5:
        profiles[1] = ("flaky/fp8", 0.15, 0.05, "flaky")
        profiles[2] = ("episodic/fp4", 0.002, 0.02, "episodic")
        profiles[3] = ("episodic/turbo", 0.002, 0.02, "episodic")
        profiles[4] = ("unreachable", 0.002, 0.35, "unreachable")
    return profiles


def generate(rounds: int, endpoints: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    profiles = endpoint_profiles(endpoints)
    episode_until: dict[str, int] = {}
    lines: list[str] = []
    for i in range(rounds):
        ts = (START + timedelta(minutes=30 * i)).isoformat().replace("+00:00", "Z")
        for tag, p_fail, p_transport, kind in profiles:
            if kind == "episodic" and i >= episode_until.get(tag, -1) and rng.random() < 1 / (21 * 48):
                episode_until[tag] = i + rng.randint(24, 4 * 48)  # a 12 h - 4 d fault, about every 3 weeks
            faulty = episode_until.get(tag, -1) > i
            r = rng.random()
            if r < p_transport:
                status = "transport"
            elif faulty and r < 0.9:
                status = "fail"
            elif r < p_transport + p_fail:
                status = "fail"
            elif r < p_transport + p_fail + 0.01:
                status = "inconclusive"
            else:
                status = "clean"
            lines.append(json.dumps({"round_ts": ts, "model": MODEL, "tag": tag, "status": status}))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=17_520)
    ap.add_argument("--endpoints", type=int, default=15)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    t0 = time.perf_counter()
    lines = generate(args.rounds, args.endpoints, args.seed)
    t1 = time.perf_counter()
    history = parse_replay(lines)
    t2 = time.perf_counter()
    base = CanaryConfig(mode=Mode.ENFORCE)
    decisions = replay(history, base)
    t3 = time.perf_counter()
    rows = history.status_rows
    print(f"history: {len(history.rounds)} rounds x {args.endpoints} endpoints = {rows} status lines "
          f"(generated in {t1 - t0:.2f} s)")
    print(f"parse:  {t2 - t1:6.2f} s  {rows / (t2 - t1):>10,.0f} rows/s")
    print(f"replay: {t3 - t2:6.2f} s  {rows / (t3 - t2):>10,.0f} rows/s  "
          f"({len(history.rounds) / (t3 - t2):,.0f} rounds/s, {len(decisions)} decisions)")
    t4 = time.perf_counter()
    summaries = what_if(history, base, [variant(base, v) for v in VARIANTS])
    t5 = time.perf_counter()
    assert summaries[0] == summarize(decisions, history, "baseline")
    print(f"what-if: {len(summaries)} settings in {t5 - t4:.2f} s\n")
    print("\n".join(format_summaries(summaries)))


if __name__ == "__main__":
    main()
