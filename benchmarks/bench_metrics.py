"""Metrics benchmark: one Prometheus scrape of `canary metrics` over a long history, beside a full scan of the
attempts table measured in the same run.

    .venv/bin/python benchmarks/bench_metrics.py                            # 100 models x 15 endpoints, 7 days
    .venv/bin/python benchmarks/bench_metrics.py --models 20 --days 2       # a smaller history (shared machine)
    .venv/bin/python benchmarks/bench_metrics.py --db /tmp/h.duckdb         # measure a history kept from before

The history is synthetic and inserted straight into a migrated DuckDB file with SQL (`range()`): rounds every
30 minutes per model, 6 attempts per endpoint per round (ttft, refusal, structured, language, tools and a
language confirmation on every fourth), outcomes, the policy state, some decisions and alerts, and the metrics
rollup and its exposition text as the rounds' save transactions would have left them
(tasks/store/metric_rollup.py, tasks/store/metric_text.py). Then the analysts' snapshot is published, as a round
does.

Figures, each measured in a fresh child process:
  scrape            wall time and peak RSS of `collector.scrape()` (what `canary metrics` writes, chunk by
                    chunk, for a GET without gzip): the first scrape after a new snapshot (the snapshot's mtime
                    moved, as a round publishing one: everything is read again), median and max of --repeat,
                    and a scrape of the same snapshot (kept: only the exclusions are worked out again). Peak
                    RSS is VmHWM after the scrape minus RSS before it (VmHWM reset before each);
  gzip              the same two with `scrape(gzip=True)` (what Prometheus asks for: `Accept-Encoding: gzip`),
                    and the bytes on the wire per scrape with and without gzip (their ratio);
  start-up read     the process's first read (`canary metrics` and `serve` do it before serving): it also
                    creates the process's DuckDB instance (~32 MB, once a process);
  full scan         per model x endpoint x contract, count, p95 TTFT and spend over every attempt row of the
                    snapshot (what a scrape would cost without the rollup), on a connection opened before (its
                    instance not counted either): wall time and peak RSS it added.
The targets (issues 23 and 31): scrape <= 100 ms (with gzip too) and <= 50 MB extra RSS at 100 x 15 x 7 days;
the ratios to the full scan and gzip's ratio to the plain text are printed (a loaded machine slows both).
The last line of output is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CONTRACTS = ("ttft", "refusal", "structured", "language", "tools")


def _maxrss_mb() -> float:
    """This process's peak RSS (VmHWM): ru_maxrss would carry the parent's peak across exec (Linux keeps it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_history(db: Path, models: int, endpoints: int, days: float) -> dict[str, int]:
    from tasks import store
    from tasks.core.metric_rollup import GENAI_BUCKETS_S
    from tasks.store.metric_text import render_all_text

    rounds = int(days * 48)
    with store.open_store(db, snapshot=False) as con:
        con.execute(f"""
            CREATE TEMP TABLE r AS SELECT m, k,
                'model-' || m AS model, 'model-' || m || '@' || k AS round_id,
                TIMESTAMPTZ '2026-11-01 00:00:00+00' + k * INTERVAL 30 MINUTE AS round_ts
            FROM range({models}) t(m), range({rounds}) u(k)""")
        tags = [f"'ep-{e}'" for e in range(endpoints)]
        con.execute(f"""
            INSERT INTO rounds (round_id, model, round_ts, mode, status, started_at, finished_at, endpoints,
                                endpoint_count, attempt_count, outcome_count, step, landed_at)
            SELECT round_id, model, round_ts, 'enforce', 'complete', round_ts, round_ts + INTERVAL 40 SECOND,
                   [{", ".join(tags)}], {endpoints}, {endpoints * 6}, {endpoints * 5}, 'saved',
                   round_ts + INTERVAL 41 SECOND FROM r""")
        con.execute(f"""
            INSERT INTO attempts (attempt_id, round_id, model, tag, provider_name, contract, attempt_no, language,
                                  started_at, http_status, ttft_ms, total_ms, chunk_count, keepalive_count,
                                  finish_reason, served_provider, pin_mismatch, prompt_tokens, completion_tokens,
                                  total_tokens, cost, text, text_truncated, reasoning)
            SELECT r.round_id || ':ep-' || e || ':' || c.contract || ':' || n, r.round_id, r.model, 'ep-' || e,
                   'Ep' || e, c.contract, n, 'en', r.round_ts, 200,
                   100 + (hash(r.round_id, e, c.contract, n) % 2000), 900 + (hash(e, r.k) % 4000), 40, 0,
                   'stop', 'Ep' || e, false, 120, 200, 320, 0.00002, 'Once upon a time, a reply.', false, ''
            FROM r, range({endpoints}) t(e),
                 (SELECT unnest(['ttft', 'refusal', 'structured', 'language', 'tools']) AS contract) c,
                 range(1, 3) v(n)
            WHERE n = 1 OR (c.contract = 'language' AND (r.k + e) % 4 = 0)""")
        con.execute(f"""
            INSERT INTO outcomes SELECT r.round_id, r.model, 'ep-' || e, c.contract,
                   CASE WHEN e = 0 AND c.contract = 'refusal' THEN 'fail' ELSE 'pass' END,
                   CASE WHEN e = 0 AND c.contract = 'refusal' THEN 'refusal_pattern' ELSE 'ok' END, '', [], 'en'
            FROM r, range({endpoints}) t(e),
                 (SELECT unnest(['ttft', 'refusal', 'structured', 'language', 'tools', 'opening']) AS contract) c""")
        con.execute(f"""
            INSERT INTO endpoint_state SELECT 'model-' || m, 'ep-' || e, 'enforce', 0, 0,
                   CASE WHEN e = 0 THEN now() + INTERVAL 1 DAY END, NULL, (e = 0)::INT, NULL, false, [], []
            FROM range({models}) t(m), range({endpoints}) u(e)""")
        con.execute("""
            INSERT INTO decisions SELECT round_id || '|suspend', round_ts, model, 'ep-0', 'suspend', 'enforce', 1,
                   round_ts + INTERVAL 1 DAY, 'fail x2', [], round_id, 'canary' FROM r WHERE k % 48 = 1""")
        con.execute("""
            INSERT INTO alerts (key, created_at, kind, model, tag, text, blocks_json, status, attempts)
            SELECT round_id || '|suspend', round_ts, 'suspend', model, 'ep-0', 'suspended', '[]', 'sent', 1
            FROM r WHERE k % 48 = 1""")
        con.execute("INSERT INTO metric_rolled_rounds SELECT round_id, model, round_ts FROM r")
        # the rollup the save transactions would have left: the same aggregates, once, over the history
        con.execute("""
            INSERT INTO metric_counters SELECT 'canary_probe_outcomes_total', model, tag, contract, outcome, count(*)
            FROM outcomes GROUP BY ALL""")
        con.execute("""
            INSERT INTO metric_counters SELECT 'canary_probe_failures_total', model, tag, contract, reason, count(*)
            FROM outcomes WHERE outcome IN ('fail', 'transport') GROUP BY ALL""")
        con.execute("""
            INSERT INTO metric_counters SELECT 'canary_probe_requests_total', model, tag, contract, 'none', count(*)
            FROM attempts GROUP BY ALL""")
        con.execute("""
            INSERT INTO metric_counters SELECT 'canary_spend_usd_total', model, tag, '', 'reported', sum(cost)
            FROM attempts GROUP BY ALL""")
        bounds = ", ".join(repr(b) for b in GENAI_BUCKETS_S) + ", 'inf'::DOUBLE"
        for name, col, tag in (("gen_ai_client_operation_duration_seconds", "total_ms", "''"),  # per model
                               ("gen_ai_client_operation_time_to_first_chunk_seconds", "ttft_ms", "tag")):
            con.execute(f"""
                INSERT INTO metric_buckets SELECT '{name}', model, {tag}, '', le,
                       count(*) FILTER ({col} / 1000 <= le)
                FROM attempts, (SELECT unnest([{bounds}]) AS le) b GROUP BY ALL""")
            con.execute(f"""
                INSERT INTO metric_counters SELECT '{name}_sum', model, {tag}, '', '', sum({col}) / 1000
                FROM attempts GROUP BY ALL""")
        con.execute("""
            INSERT INTO metric_last_probe SELECT o.model, o.tag, o.contract, o.outcome, o.reason, a.ttft_ms / 1000,
                   a.total_ms / 1000, o.round_id, r.round_ts
            FROM outcomes o JOIN r USING (round_id)
            LEFT JOIN attempts a ON a.attempt_id = o.round_id || ':' || o.tag || ':' || o.contract || ':1'
            WHERE r.k = (SELECT max(k) FROM r)""")
        render_all_text(con)  # what each model's last save transaction rendered (tasks/store/metric_text.py)
        sizes = {t: int(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]
                 for t in ("rounds", "attempts", "outcomes", "metric_counters", "metric_buckets",
                           "metric_last_probe")}
    with store.open_store(db, snapshot=True):
        pass
    return sizes


def _reset_peak() -> float:
    """Reset VmHWM to the current RSS (Linux: `5` into clear_refs) and return it; -1 where not permitted."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return -1.0
    return _rss_mb()


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure_scrapes(db: Path, repeat: int) -> dict[str, float]:
    """In a fresh process, as `canary metrics` runs: the start-up read (the first scrape of the process: it also
    creates the process's DuckDB instance, ~32 MB once), then `repeat` times a new snapshot (its mtime moved, as
    a round publishing one: the exporter reads everything again) and its first scrape, and `repeat` scrapes of
    the same snapshot. Each scrape is `exposition_chunks` (what the server writes, chunk by chunk); its peak RSS
    is VmHWM after it minus RSS before it, VmHWM reset before each."""
    import os

    from tasks.config import CanaryConfig
    from tasks.metrics.exporter import CanaryCollector
    from tasks.store.snapshot import snapshot_path

    db.with_name("none.toml").write_text("", encoding="utf-8")  # no built-in exclusions (a missing file is an error)
    cfg = CanaryConfig(exclusions_file=str(db.with_name("none.toml")))
    collector = CanaryCollector([db], cfg)
    before = _maxrss_mb()
    t = time.perf_counter()
    chunks = collector.scrape()
    startup_ms = (time.perf_counter() - t) * 1000
    startup_rss = _maxrss_mb() - before
    text = b"".join(chunks)
    del chunks
    out: dict[str, float] = {}
    for gzip, suffix in ((False, ""), (True, "_gzip")):
        fresh, fresh_rss, kept, kept_rss = [], [], [], []
        wire = 0
        for times, peaks, touch in ((fresh, fresh_rss, True), (kept, kept_rss, False)):
            for _ in range(repeat):
                if touch:
                    os.utime(snapshot_path(db))  # a new snapshot: the kept text is dropped, everything read again
                base = _reset_peak()
                t = time.perf_counter()
                chunks = collector.scrape(gzip=gzip)
                wire = sum(len(c) for c in chunks)  # the Content-Length the server sends
                times.append((time.perf_counter() - t) * 1000)
                peaks.append(_maxrss_mb() - base if base >= 0 else float("nan"))
                del chunks
        out |= {f"wire_bytes{suffix}": wire,
                f"scrape_new_snapshot_median_ms{suffix}": round(statistics.median(fresh), 1),
                f"scrape_new_snapshot_max_ms{suffix}": round(max(fresh), 1),
                f"scrape_new_snapshot_rss_mb{suffix}": round(max(fresh_rss), 1),
                f"scrape_kept_median_ms{suffix}": round(statistics.median(kept), 1),
                f"scrape_kept_max_ms{suffix}": round(max(kept), 1),
                f"scrape_kept_rss_mb{suffix}": round(max(kept_rss), 1)}
    samples = sum(1 for line in text.decode().splitlines() if line and not line.startswith("#"))
    return {"samples": samples, "exposition_mb": round(len(text) / 2**20, 1),
            "startup_read_ms": round(startup_ms, 1), "startup_read_rss_mb": round(startup_rss, 1), **out}


def measure_full_scan(db: Path) -> dict[str, float]:
    """In a fresh process: per model x endpoint x contract, count, p95 TTFT and spend over every attempt."""
    from tasks.store import open_snapshot

    con = open_snapshot(db)
    before = _maxrss_mb()
    t = time.perf_counter()
    rows = con.execute("SELECT model, tag, contract, count(*), quantile_cont(ttft_ms, 0.95), sum(cost)"
                       " FROM attempts GROUP BY ALL").fetchall()
    scan_ms = (time.perf_counter() - t) * 1000
    con.close()
    return {"full_scan_ms": round(scan_ms, 1), "full_scan_rss_mb": round(_maxrss_mb() - before, 1),
            "full_scan_groups": len(rows)}


def _in_child(what: str, db: Path, repeat: int) -> dict[str, float]:
    import subprocess

    out = subprocess.run([sys.executable, __file__, "--measure", what, "--db", str(db), "--repeat", str(repeat)],
                         capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--endpoints", type=int, default=15)
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--repeat", type=int, default=10, help="scrapes per median")
    ap.add_argument("--dir", type=Path, default=None, help="where the DuckDB file goes (default: a temp dir)")
    ap.add_argument("--db", type=Path, default=None, help="measure an existing history (no build)")
    ap.add_argument("--measure", choices=("scrape", "scan"), help=argparse.SUPPRESS)  # the child processes
    args = ap.parse_args()
    if args.measure:
        fn = measure_scrapes(args.db, args.repeat) if args.measure == "scrape" else measure_full_scan(args.db)
        print(json.dumps(fn))
        return

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        db = args.db or Path(tmp) / "bench.duckdb"
        sizes: dict[str, int] = {}
        if args.db is None:
            t = time.perf_counter()
            sizes = build_history(db, args.models, args.endpoints, args.days)
            print(f"history: {args.models} models x {args.endpoints} endpoints x {args.days:g} days: "
                  + ", ".join(f"{k} {v:,}" for k, v in sizes.items())
                  + f"; {db.stat().st_size / 2**20:.0f} MB, built in {time.perf_counter() - t:.1f} s")
        scrape = _in_child("scrape", db, args.repeat)
        scan = _in_child("scan", db, args.repeat)
    new_ms, new_mb = scrape["scrape_new_snapshot_median_ms"], scrape["scrape_new_snapshot_rss_mb"]
    print(f"scrape: {scrape['samples']:,} samples ({scrape['exposition_mb']:.1f} MB); first scrape after a new "
          f"snapshot: median of {args.repeat} {new_ms:.0f} ms (max {scrape['scrape_new_snapshot_max_ms']:.0f} ms), "
          f"peak RSS +{new_mb:.1f} MB; same snapshot {scrape['scrape_kept_median_ms']:.1f} ms, "
          f"+{scrape['scrape_kept_rss_mb']:.1f} MB")
    gz, plain = scrape["wire_bytes_gzip"], scrape["wire_bytes"]
    print(f"gzip (Accept-Encoding: gzip, as Prometheus asks): {gz / 2**20:.2f} MB on the wire per scrape instead of "
          f"{plain / 2**20:.1f} MB, ratio {gz / plain:.3f}; first scrape after a new snapshot: median "
          f"{scrape['scrape_new_snapshot_median_ms_gzip']:.0f} ms (max {scrape['scrape_new_snapshot_max_ms_gzip']:.0f}"
          f" ms; the served exporter compresses in the background within {5:.0f} s of a new snapshot), "
          f"same snapshot {scrape['scrape_kept_median_ms_gzip']:.1f} ms (max {scrape['scrape_kept_max_ms_gzip']:.1f}"
          f" ms)")
    print(f"start-up read (once a process, before serving; DuckDB's instance included): "
          f"{scrape['startup_read_ms']:.0f} ms, peak RSS +{scrape['startup_read_rss_mb']:.1f} MB")
    print(f"full scan of attempts: {scan['full_scan_ms']:.0f} ms; peak RSS +{scan['full_scan_rss_mb']:.1f} MB")
    print(f"first scrape after a new snapshot / full scan: wall {new_ms / scan['full_scan_ms']:.2f}, "
          f"peak RSS {new_mb / max(scan['full_scan_rss_mb'], 0.1):.2f}")
    size = {"models": args.models, "endpoints": args.endpoints, "days": args.days} if args.db is None else {}
    print(json.dumps({**size, **sizes, **scrape, **scan}))


if __name__ == "__main__":
    main()
