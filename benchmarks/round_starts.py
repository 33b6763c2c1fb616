"""How a cycle's rounds start and overlap (issue 45), from what the run left behind (its DuckDB file and published
lists), like catalog_figures.py: any tree's rounds give the same figures.

* round start latency: from the round's flow run beginning (Prefect's "Beginning subflow run '<name>'" line in the
  cycle's output, which every tree prints as a round's flow starts) to its first probe sent (the probe worker's
  `started_at` of the round's earliest attempt): what a round's own start costs (its first store window, discovery,
  the worker's queue). Not in it: waiting to be let in (a scheduling choice: `models_in_flight`), and Prefect's
  creating the run. Before issue 45's admission, this figure was counted from when the cycle's FIFO pool could start
  the round (`admissions`: the k-th round end admits round `models_in_flight + k`), which a round that steps aside for
  the next (tasks/orchestration/admission.py) makes meaningless (it read 0 ms); that count is still given, as
  `pool_start_latency_ms`, for trees without a log;
* begun by: seconds from the cycle's first round beginning to its `models_in_flight`-th (all of the first rounds
  the cycle starts at once begun: Prefect's creating them in a burst, which once serialized the starts);
* first probe from the cycle's start: the same end point, from `round_ts` (issue 45's "the 10th model's first probe at
  16 s"), at the 10th, 50th and 90th percentile of the rounds and the last;
* rounds probing at once: a round probes from its first attempt's start to its last attempt's end; sampled every
  0.25 s from the cycle's first probe to its last, the mean and the max.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from catalog_figures import model_slug, percentile


def admissions(order: Sequence[str], ends: Mapping[str, float], start: float, in_flight: int) -> dict[str, float]:
    """When each model of `order` could start: `start` for the first `in_flight`, then the sorted `ends` in turn
    (a FIFO pool of `in_flight` threads: each end frees a thread for the next model waiting)."""
    freed = sorted(ends.values())
    out: dict[str, float] = {}
    for i, model in enumerate(order):
        k = i - in_flight
        out[model] = start if k < 0 else freed[min(k, len(freed) - 1)] if freed else start
    return out


#: Prefect's line as a round's flow run begins: "HH:MM:SS.mmm | INFO | ... Beginning subflow run 'canary-round-<model>-
#: <YYYY-mm-ddTHHMM>' ..." (flows/round.py `round_run_name`), in local time.
BEGUN = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) .*Beginning subflow run 'canary-round-(.+)-\d{4}-\d\d-\d\dT\d{4}'")


def begun_from_log(lines: Sequence[str], after_epoch: float) -> dict[str, float]:
    """Each round's flow run beginning (epoch seconds) from the cycle's output: a line's local clock time on the
    day of `after_epoch` (the next day when that would come more than an hour before it); a model's first."""
    day = datetime.fromtimestamp(after_epoch).replace(hour=0, minute=0, second=0, microsecond=0)
    midnight = time.mktime(day.timetuple())
    out: dict[str, float] = {}
    for line in lines:
        m = BEGUN.match(line)
        if m is None:
            continue
        h, mi, sec, ms = (int(g) for g in m.groups()[:4])
        at = midnight + h * 3600 + mi * 60 + sec + ms / 1000
        if at < after_epoch - 3600:
            at += 86400
        out.setdefault(m.group(5), at)
    return out


def covering(spans: Sequence[tuple[float, float]], start: float, end: float, step_s: float) -> list[int]:
    """How many `spans` ([s, e)) cover each moment from `start` to `end`, sampled every `step_s` (one sweep)."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    counts, now, i, t = [], 0, 0, start
    while t < end:
        while i < len(edges) and edges[i][0] <= t:
            now += edges[i][1]
            i += 1
        counts.append(now)
        t += step_s
    return counts


def overlap(spans: Sequence[tuple[float, float]], step_s: float = 0.25) -> tuple[float, int]:
    """Mean and max number of `spans` covering a moment, sampled every `step_s` from the first start to the last
    end."""
    if not spans:
        return 0.0, 0
    counts = covering(spans, min(s for s, _ in spans), max(e for _, e in spans), step_s)
    return (sum(counts) / len(counts) if counts else 0.0), max(counts, default=0)


def round_start_figures(db: str, order: Sequence[str], in_flight: int, publish_dir: Path,
                        since_epoch: float | None = None, log: Path | None = None) -> dict[str, Any]:
    """The figures of the module docstring for the run in `db` (`since_epoch`: only rounds at or after it; `log`:
    the cycle's output)."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        rounds = con.execute(
            "SELECT r.model, epoch_us(r.round_ts) / 1e6, epoch_us(r.finished_at) / 1e6, "
            "min(epoch_us(a.started_at)) / 1e6, max(epoch_us(a.started_at) / 1e6 + a.total_ms / 1000) "
            "FROM rounds r JOIN attempts a USING (round_id) GROUP BY ALL"
        ).fetchall()
    finally:
        con.close()
    rounds = [r for r in rounds if since_epoch is None or r[1] >= since_epoch]
    if not rounds:
        return {}
    start = min(r[1] for r in rounds)
    first = {r[0]: r[3] for r in rounds}
    ends = {}
    for model, _ts, finished, _first, last in rounds:
        published = publish_dir / f"{model_slug(model)}.json"
        mtime = published.stat().st_mtime if published.exists() else 0.0
        ends[model] = max(finished or last, mtime if mtime >= start else 0.0)
    admitted = admissions([m for m in order if m in first], ends, start, in_flight)
    pooled = [max(0.0, first[m] - admitted[m]) * 1000 for m in admitted]
    lines = log.read_text(errors="replace").splitlines() if log is not None and log.exists() else []
    begun = {m: t for m, t in begun_from_log(lines, start - 300).items() if m in first}
    latency = [(first[m] - t) * 1000 for m, t in begun.items()]
    starts = sorted(begun.values())
    from_start = sorted(first[m] - start for m in first)
    mean, peak = overlap([(r[3], r[4]) for r in rounds])
    return {
        "round_start_latency_ms": _spread(latency),
        "pool_start_latency_ms": _spread(pooled),
        "first_rounds_begun_s": starts[min(in_flight, len(starts)) - 1] - starts[0] if starts else None,
        "first_probe_from_cycle_start_s": {"p10": percentile(from_start, 10), "p50": percentile(from_start, 50),
                                           "p90": percentile(from_start, 90), "last": from_start[-1]},
        "rounds_probing_mean": mean,
        "rounds_probing_max": peak,
    }


def _spread(ms: Sequence[float]) -> dict[str, Any]:
    return {"n": len(ms), "p50": percentile(ms, 50), "p90": percentile(ms, 90), "max": max(ms, default=None)}


#: Seconds after its start a request with no first text yet stops counting toward `concurrency` (copied from
#: tasks/probe/loop.py PARK_AFTER_S: the benchmark reads files, not code).
PARK_AFTER_S = 2.0


def counted_s(total_s: float, ttft_s: float | None, park_after_s: float = PARK_AFTER_S) -> float:
    """Seconds one request counts toward `concurrency`: all of it when its first text came (or it ended) within
    `park_after_s`, else `park_after_s` (then it is parked and counts no more)."""
    if total_s <= park_after_s or (ttft_s is not None and ttft_s <= park_after_s):
        return total_s
    return park_after_s


def budget_figures(db: str, concurrency: int, since_epoch: float | None = None,
                   step_s: float = 0.25) -> dict[str, Any]:
    """What bounds a cycle once its rounds start at once: the probes' `concurrency` budget.

    * probe floor: the seconds every request counted toward `concurrency` (counted_s) over `concurrency`, the wall
      the probing could not beat at that setting however rounds start;
    * concurrency used: the requests counting toward it, sampled every `step_s` from the first probe to the last,
      mean and its share of `concurrency`; the share of that time under half of it (the dips: every round in flight
      waiting only on parked requests, or rounds not started yet)."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        rows = con.execute("SELECT epoch_us(started_at) / 1e6, total_ms / 1000, ttft_ms / 1000 FROM attempts "
                           "WHERE total_ms IS NOT NULL").fetchall()
    finally:
        con.close()
    rows = [r for r in rows if since_epoch is None or r[0] >= since_epoch]
    if not rows or concurrency <= 0:
        return {}
    spans = [(s, s + counted_s(d, t)) for s, d, t in rows]
    counted = sum(e - s for s, e in spans)
    first, last = min(s for s, _ in spans), max(s + d for s, d, _ in rows)
    samples = covering(spans, first, last, step_s)
    mean = sum(samples) / len(samples) if samples else 0.0
    return {"probe_floor_s": counted / concurrency, "counted_call_s": counted,
            "concurrency_used_mean": mean, "concurrency_used_share": mean / concurrency,
            "under_half_share": sum(1 for n in samples if n < concurrency / 2) / len(samples) if samples else None}
