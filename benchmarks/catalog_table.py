"""The tables benchmarks/bench_catalog.py prints: one size's figures per tree (this tree, the baseline) and their
ratio, from the results `phase` returns."""

from __future__ import annotations

from typing import Any


def fmt(value: Any, spec: str = "{:.2f}") -> str:
    return "-" if value is None else spec.format(value)


def _ratio(a: Any, b: Any) -> str:
    return f"{a / b:.2f}x" if isinstance(a, int | float) and isinstance(b, int | float) and b else "-"


ROWS: list[tuple[str, str, str]] = [  # label, key, format
    ("wall s", "wall_s", "{:.1f}"),
    ("peak RSS MB, process tree", "peak_rss_mb", "{:.0f}"),
    ("CPU s, canary tree", "cpu_s", "{:.1f}"),
    ("CPU ms per endpoint-round", "cpu_ms_per_endpoint_round", "{:.1f}"),
    ("slowest single chain s", "slowest_chain_s", "{:.1f}"),
    ("simulator CPU share while probing", "simulator_cpu_share", "{:.2f}"),
    ("start to first probe s", "start_to_first_probe_s", "{:.1f}"),
    ("last probe to exit s", "last_probe_to_exit_s", "{:.1f}"),
    ("round overhead s (median)", "round_overhead_s_median", "{:.1f}"),
    ("first models_in_flight rounds all begun, s", "first_rounds_begun_s", "{:.1f}"),
    ("rounds probing at once, mean", "rounds_probing_mean", "{:.1f}"),
    ("rounds probing at once, max", "rounds_probing_max", "{:.0f}"),
    ("probe floor s (counted call-s / concurrency)", "probe_floor_s", "{:.1f}"),
    ("concurrency used, mean share while probing", "concurrency_used_share", "{:.2f}"),
    ("  time under half of it, share", "under_half_share", "{:.2f}"),
]


def _ttft(r: dict[str, Any]) -> str:
    t = r.get("ttft_error_ms") or {}
    return "/".join(fmt(t.get(k), "{:.0f}") for k in ("p50", "p95", "p99", "max")) + f" (n={t.get('n', 0)})"


def _starts(r: dict[str, Any], key: str = "round_start_latency_ms") -> str:
    t = r.get(key) or {}
    return "/".join(fmt(t.get(k), "{:.0f}") for k in ("p50", "p90", "max"))


def _pooled(r: dict[str, Any]) -> str:
    return _starts(r, "pool_start_latency_ms")


def _from_start(r: dict[str, Any]) -> str:
    t = r.get("first_probe_from_cycle_start_s") or {}
    return "/".join(fmt(t.get(k), "{:.1f}") for k in ("p10", "p50", "p90", "last"))


def load(r: dict[str, Any]) -> str:
    return "/".join(f"{x:.1f}" for x in (r["load_before"][0], r["load_after"][0]))


def table(size: int, runs: dict[str, dict[str, Any]], cycle: str = "") -> str:
    """One size's figures (of one cycle): this tree, the baseline tree, their ratio."""
    names = list(runs)
    title = f"{size} models, {cycle}:" if cycle else f"{size} models:"
    head = f"{title:<42}" + "".join(f"{n:>30}" for n in names) + ("   ratio" if len(names) == 2 else "")
    lines = [head]
    for label, key, spec in ROWS:
        values = [runs[n].get(key) for n in names]
        row = f"{label:<42}" + "".join(f"{fmt(v, spec):>30}" for v in values)
        if len(names) == 2:
            row += f"   {_ratio(values[0], values[1])}"
        lines.append(row)

    def pair(a: str, b: str) -> Any:
        return lambda r: f"{r.get(a, '-')}/{r.get(b, '-')}"

    extra = [
        ("load average before/after", load),
        ("round start latency ms p50/p90/max (begun -> 1st probe)", _starts),
        ("  from when a FIFO pool could start it (before 45)", _pooled),
        ("first probe from cycle start s p10/50/90/last", _from_start),
        ("TTFT error ms p50/p95/p99/max", _ttft),
        ("healthy failing ttft / any", pair("healthy_failing_ttft", "healthy_failing_any")),
        ("slow starts failing ttft", pair("slow_starts_failing_ttft", "slow_starts")),
        ("faulty endpoints caught", pair("faulty_caught", "faulty")),
        ("rounds complete / attempts", pair("rounds_complete", "attempts")),
        ("processes at once / exit code", pair("peak_processes", "exit_code")),
    ]
    for label, get in extra:
        lines.append(f"{label:<42}" + "".join(f"{get(runs[n]):>30}" for n in names))
    for n in names:
        by = runs[n].get("peak_rss_by_process_mb") or {}
        lines.append(f"  peak RSS by process, {n}: " + ", ".join(f"{k} {v} MB" for k, v in by.items()))
    return "\n".join(lines)


def per_extra_model(results: dict[int, dict[str, dict[str, Any]]], name: str) -> float | None:
    """(peak RSS at the largest size - at the smallest) / the models between them, MB."""
    sizes = sorted(s for s in results if name in results[s])
    if len(sizes) < 2:
        return None
    lo, hi = results[sizes[0]][name], results[sizes[-1]][name]
    return float((hi["peak_rss_mb"] - lo["peak_rss_mb"]) / (sizes[-1] - sizes[0]))
