"""The figures of one catalog run (benchmarks/bench_catalog.py), read from what the run left behind (its
DuckDB file, its published ignore lists) and from /proc while it runs. Only stored tables are read (rounds,
attempts, outcomes), never the canary's code: today's and tomorrow's rounds give the same figures.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Key = tuple[str, str]  # (model, tag)
_TICK = os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated q-th percentile (0..100) of `values`; None when empty."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def merged_span_s(intervals: Sequence[tuple[float, float]]) -> float:
    """Seconds covered by the union of [start, end) intervals."""
    total, cur_start, cur_end = 0.0, None, None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


def model_slug(model: str) -> str:
    """The published file's stem, as tasks/core/plan.py names it (copied: the benchmark reads files, not code)."""
    out = "".join(c if c.isalnum() else "-" for c in model.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


def run_figures(
    db: str, roles: Mapping[Key, str], planned_ms: Mapping[Key, float], publish_dir: Path,
    since_epoch: float | None = None,
) -> dict[str, Any]:
    """Everything the benchmark prints about one run, from its database and published files (`since_epoch`: only
    the rounds whose time is at or after it: a later cycle on the same database)."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        attempts = con.execute(
            "SELECT round_id, model, tag, contract, epoch_us(started_at) / 1e6, ttft_ms, total_ms "
            "FROM attempts"
        ).fetchall()
        rounds = con.execute(
            "SELECT round_id, model, status, epoch_us(round_ts) / 1e6 FROM rounds"
        ).fetchall()
        outcomes = con.execute("SELECT round_id, model, tag, contract, outcome FROM outcomes").fetchall()
    finally:
        con.close()
    if since_epoch is not None:
        rounds = [r for r in rounds if r[3] >= since_epoch]
        kept = {r[0] for r in rounds}
        attempts = [a for a in attempts if a[0] in kept]
        outcomes = [o for o in outcomes if o[0] in kept]

    chains: dict[tuple[str, str], float] = {}
    by_round: dict[str, list[tuple[float, float]]] = {}
    ttft_err: list[float] = []
    healthy_no_ttft = 0
    for round_id, model, tag, _contract, start, ttft, total in attempts:
        chains[(round_id, tag)] = chains.get((round_id, tag), 0.0) + (total or 0.0) / 1000.0
        by_round.setdefault(round_id, []).append((start, start + (total or 0.0) / 1000.0))
        if roles.get((model, tag)) == "healthy":
            if ttft is None:
                healthy_no_ttft += 1
            else:
                ttft_err.append(ttft - planned_ms[(model, tag)])

    failing: dict[str, set[Key]] = {"ttft": set(), "any": set(), "flagged": set()}
    for _round_id, model, tag, contract, outcome in outcomes:
        if outcome != "pass":
            failing["flagged"].add((model, tag))
        if outcome in ("fail", "transport"):
            failing["any"].add((model, tag))
            if contract == "ttft" and outcome == "fail":
                failing["ttft"].add((model, tag))

    def of_role(keys: set[Key], want: str) -> int:
        return sum(1 for k in keys if roles.get(k) == want)

    faulty = {k for k, r in roles.items() if r not in ("healthy", "slow_start")}
    overheads, probe_phases, round_walls = [], [], []
    for round_id, model, _status, round_ts in rounds:
        spans = by_round.get(round_id)
        published = publish_dir / f"{model_slug(model)}.json"
        if not spans or not published.exists():
            continue
        first = min(s for s, _ in spans)
        last = max(e for _, e in spans)
        wall = published.stat().st_mtime - min(round_ts, first)
        round_walls.append(wall)
        probe_phases.append(last - first)
        overheads.append(wall - (last - first))
    all_spans = [s for spans in by_round.values() for s in spans]
    slowest = max(chains.items(), key=lambda kv: kv[1], default=(("", ""), 0.0))
    return {
        "rounds": len(rounds),
        "rounds_complete": sum(1 for r in rounds if r[2] == "complete"),
        "attempts": len(attempts),
        "slowest_chain_s": slowest[1],
        "slowest_chain_endpoint": slowest[0][1],
        "probe_span_s": (max(e for _, e in all_spans) - min(s for s, _ in all_spans)) if all_spans else 0.0,
        "probing_s": merged_span_s(all_spans),
        "first_attempt_epoch": min((s for s, _ in all_spans), default=None),
        "last_attempt_end_epoch": max((e for _, e in all_spans), default=None),
        "ttft_error_ms": {
            "n": len(ttft_err),
            "p50": percentile(ttft_err, 50),
            "p95": percentile(ttft_err, 95),
            "p99": percentile(ttft_err, 99),
            "max": max(ttft_err, default=None),
        },
        "healthy_attempts_without_ttft": healthy_no_ttft,
        "healthy_failing_ttft": of_role(failing["ttft"], "healthy"),
        "healthy_failing_any": of_role(failing["any"], "healthy"),
        "slow_starts_failing_ttft": of_role(failing["ttft"], "slow_start"),
        "slow_starts": sum(1 for r in roles.values() if r == "slow_start"),
        "faulty_caught": len(failing["flagged"] & faulty),
        "faulty": len(faulty),
        "round_wall_s_median": percentile(round_walls, 50),
        "probe_phase_s_median": percentile(probe_phases, 50),
        "round_overhead_s_mean": sum(overheads) / len(overheads) if overheads else None,
        "round_overhead_s_median": percentile(overheads, 50),
        "round_overhead_s_max": max(overheads, default=None),
    }


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), seconds; 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _children_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        out.setdefault(ppid, []).append(int(entry.name))
    return out


def tree_pids(root: int) -> list[int]:
    """`root` and all its descendants, now."""
    children, out, todo = _children_map(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def process_role(cmdline: str) -> str:
    """What a process of a canary's tree is, from its command line (the process tree of docs/operations.md)."""
    cmdline = f"{cmdline} "
    for marker, role in (("tasks.probe.worker", "probe worker"), ("server_child", "private Prefect API server"),
                         ("prefect_api.watchdog", "server watchdog"), ("uvicorn", "private Prefect API server"),
                         ("prefect server", "Prefect server"), ("prefect.engine", "serve's flow-run process"),
                         (" serve ", "canary serve")):
        if marker in cmdline:
            return role
    return "canary run (the flow process)" if " run " in cmdline or "canary_round" in cmdline else \
        cmdline.split(" ")[0].rsplit("/", 1)[-1]


class TreeSampler:
    """Polls a process tree every `interval_s`: the peak of the summed RSS (shared pages count once per
    process), each process's own peak RSS (`peak_by_role`, by `process_role`), the most processes seen at once,
    the command line of every process seen, and the CPU seconds of the tree (`cpu_s`: each process as last seen,
    so children that exited still count)."""

    def __init__(self, root: int, interval_s: float = 0.25) -> None:
        self.root, self.interval_s = root, interval_s
        self.peak_rss_mb = 0.0
        self.peak_processes = 0
        self.names: dict[int, str] = {}
        self.peak_by_pid: dict[int, float] = {}
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-sampler", daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def sample(self) -> None:
        pids = tree_pids(self.root)
        total = 0.0
        for pid in pids:
            rss = rss_mb(pid)
            total += rss
            self.peak_by_pid[pid] = max(self.peak_by_pid.get(pid, 0.0), rss)
            self._cpu[pid] = max(self._cpu.get(pid, 0.0), cpu_seconds(pid))
            if pid not in self.names:
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                    self.names[pid] = cmd.strip()[:120]
                except OSError:
                    pass
        self.peak_rss_mb = max(self.peak_rss_mb, total)
        self.peak_processes = max(self.peak_processes, len(pids))

    @property
    def cpu_s(self) -> float:
        return sum(self._cpu.values())

    @property
    def peak_by_role(self) -> dict[str, float]:
        """Each kind of process's largest peak RSS, MB."""
        out: dict[str, float] = {}
        for pid, peak in self.peak_by_pid.items():
            role = process_role(self.names.get(pid, ""))
            out[role] = max(out.get(role, 0.0), peak)
        return out
