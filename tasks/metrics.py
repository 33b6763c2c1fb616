"""The Prometheus exporter's collector: the canary's state, read from the analysts' snapshot at each scrape.

    collector = CanaryCollector(["canary.duckdb"], cfg)      # one file, or several shards (as `canary catalog`)
    exposition(collector)                                    # one scrape (bytes)
    exposition_chunks(collector)                             # the same, in chunks (what the server writes)
    serve_metrics(["canary.duckdb"], cfg, 9464)             # `canary metrics`; `canary serve --metrics-port`

Each scrape opens the snapshot(s) read-only (tasks/store/snapshot.py, tasks/store/catalog.py), never the live
file, so a scrape never blocks a round. It reads small tables only: the exposition text of the rollup's families
that each round's save transaction rendered for its model (`metric_text`, tasks/store/metric_text.py), the
policy state, the exclusions, the outbox and the rounds; never the attempts, and it renders no rollup row. What
a snapshot says is kept (as encoded chunks, never joined) until the snapshot changes (once a cycle). A family
is one `Family(...)` line in `FAMILIES` (tasks/store/metric_text.py).
Conventions (Prometheus, blackbox_exporter, Cloudprober, OpenTelemetry GenAI): base units (seconds, USD), `_total`
counters, `_timestamp_seconds` for instants,
`canary_build_info` = 1; labels are bounded (models, tags, enums; reasons via `bounded_reason`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import duckdb
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from tasks.clock import utcnow
from tasks.config import CanaryConfig
from tasks.core.exclusions import load_builtin, merge_ignore_list
from tasks.core.types import Layer
from tasks.errors import StoreError
from tasks.quiet_log import QuietLog
from tasks.store.connection import detach_snapshot, open_snapshot
from tasks.store.metric_text import (
    FAMILIES,
    HISTOGRAMS,
    ExclusionRows,
    Family,
    exclusion_rows,
    header,
    scrape_lines,
    stored_text,
)
from tasks.store.snapshot import file_signature, snapshot_path

log = logging.getLogger(__name__)
_BY_NAME = {f.name: f for f in (*FAMILIES, *HISTOGRAMS)}
_SCRAPED = tuple(f for f in FAMILIES if not f.per_model)  # rendered at each new snapshot (small tables)


def build_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("provider-canary")
    except PackageNotFoundError:
        return "unknown"


class CanaryCollector(Collector):
    """The small families (build info, the config's thresholds, the snapshots' age) as prometheus_client
    families; `render()` writes everything read from the snapshot(s) as exposition text (module doc).

    `cfg` gives the builtin layer and the thresholds the alert rules compare with (min_hosts, the interval,
    the budget)."""

    def __init__(self, dbs: Sequence[str | os.PathLike[str]], cfg: CanaryConfig,
                 now: Callable[[], datetime] = utcnow) -> None:
        self.dbs = [Path(d) for d in dbs]
        self.cfg = cfg
        self.now = now
        self._lock = threading.Lock()
        self._duck: Any = None  # the DuckDB instance each new snapshot is attached to (one file)
        self._cache: tuple[tuple[tuple[int, int] | None, ...], list[bytes], ExclusionRows | None] | None = None
        self._quiet = QuietLog(log)  # "no database yet" once, not at every refresh (every 5 s) until the first round

    def describe(self) -> list[Metric]:
        return []  # families depend on the data; no describe-time query

    def collect(self) -> Iterator[Metric]:
        yield _gauge("canary_build_info", "The exporter's version (value 1)", ("version",), [((build_version(),), 1)])
        cfg = self.cfg
        yield _gauge("canary_config_min_hosts", "min_hosts: routable endpoints a suspension must leave", (),
                     [((), cfg.min_hosts)])
        yield _gauge("canary_config_interval_seconds", "interval_min, in seconds", (), [((), cfg.interval_min * 60)])
        yield _gauge("canary_config_budget_usd_per_day", "budget_usd_per_day (0: no budget)", (),
                     [((), cfg.budget_usd_per_day)])
        stamps = []
        for db in self.dbs:
            snap = snapshot_path(db)
            if snap.exists():
                stamps.append(((db.stem,), snap.stat().st_mtime))
        yield _gauge("canary_snapshot_timestamp_seconds", "When the shard's analysts' snapshot was published",
                     ("shard",), stamps)

    def render(self) -> list[bytes]:
        """The families read from the snapshot(s), as exposition text in chunks (written one by one: the
        ~9 MB at 100 models x 15 endpoints is never joined). The large families' text was rendered per model by
        the rounds' save transactions (tasks/store/metric_text.py): a new snapshot costs reading it, not
        rendering it; the small families are rendered by DuckDB (prometheus_client's own formatter costs ~20 us
        a sample).

        The snapshot changes once a cycle: what it says is kept, keyed by the snapshots' (mtime, size), so the
        scrapes between two rounds open nothing. Only the exclusions are worked out again at every scrape,
        from the kept rows, because they depend on the time (a suspension or an exclusion running out)."""
        up = "# HELP canary_snapshot_up 1 if the snapshot(s) could be read at this scrape\n" \
             "# TYPE canary_snapshot_up gauge\ncanary_snapshot_up {}\n"
        with self._lock:
            signature = tuple(file_signature(snapshot_path(db)) for db in self.dbs)
            if self._cache is None or self._cache[0] != signature or None in signature:
                self._cache = None  # the old text goes before the new one is read (peak RSS)
                try:
                    con = self._open()
                except StoreError as exc:
                    self._quiet.say("open", f"metrics: {exc}")
                    return [up.format(0).encode()]
                self._quiet.end("open", "metrics: the snapshot reads again")
                try:
                    chunks = _read_families(con)
                    self._cache = (signature, chunks, exclusion_rows(con))
                finally:
                    if con is self._duck:
                        detach_snapshot(con)
                    else:
                        con.close()
            _, chunks, rows = self._cache
        return [up.format(1).encode(), *chunks, self._exclusions(rows).encode()]

    def _open(self) -> Any:
        """The snapshot attached to the kept instance (one file), or a catalog over several (a new instance)."""
        from tasks.store.catalog import open_catalog

        if len(self.dbs) > 1:
            return open_catalog(list(self.dbs), threads=1)  # small queries: one thread is faster and lighter
        if self._duck is None:
            self._duck = duckdb.connect(config={"threads": 1})
        return open_snapshot(self.dbs[0], into=self._duck)

    def _exclusions(self, rows: ExclusionRows | None) -> str:
        """`canary_endpoint_excluded{layer}` and `canary_routable_endpoints{model}`: the ignore list's layers
        over the endpoints of each model's latest complete full round (what the capacity floor counts)."""
        if rows is None:
            return ""
        now = self.now()
        path = Path(self.cfg.exclusions_file)
        builtin = load_builtin(path) if path.exists() else []
        excluded = [_header("canary_endpoint_excluded", "gauge", "1 if the layer (builtin, operational, canary) "
                            "keeps the endpoint out of traffic")]
        routable = [_header("canary_routable_endpoints", "gauge", "Endpoints of the model's latest round that "
                            "no layer excludes")]
        layers = [str(layer) for layer in Layer]
        for model, tags in rows.latest:
            ignore = merge_ignore_list(model, tags, builtin, rows.operational, rows.states.get(model, []), now)
            hit = {(e.tag, str(e.layer)) for e in ignore.entries}
            m = _escape(model)
            for tag in sorted(tags):
                t = _escape(tag)
                excluded += [f'canary_endpoint_excluded{{model="{m}",endpoint="{t}",layer="{layer}"}} '
                             f'{int((tag, layer) in hit)}\n' for layer in layers]
            routable.append(f'canary_routable_endpoints{{model="{m}"}} '
                            f'{sum(1 for t in tags if t not in ignore.ignore)}\n')
        return "".join(excluded) + "".join(routable)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _header(name: str, kind: str, help_: str) -> str:
    return header(Family(name, kind, help_, (), ""))


def _read_families(con: Any) -> list[bytes]:
    """Every family read from the snapshot: the stored text (a header, then one chunk per model), then the
    families rendered now; a family whose query fails (a shard a migration behind) is skipped. The stored rows
    are grouped here, not by an ORDER BY (DuckDB would hold a sorted copy of the ~9 MB: slower, heavier)."""
    rows = stored_text(con)
    stored: dict[str, list[tuple[str, bytes]]] = {}
    while rows is not None and (batch := rows.fetchmany(64)):
        for family, model, body in batch:
            if family in _BY_NAME:
                stored.setdefault(family, []).append((model, body.encode()))
    chunks: list[bytes] = []
    for f in (*FAMILIES, *HISTOGRAMS):
        if f.name in stored:
            chunks.append(header(f).encode())
            chunks += [body for _, body in sorted(stored.pop(f.name), key=lambda mb: mb[0])]
    return chunks + [_render_scraped(con, _SCRAPED).encode()]


def _render_scraped(con: Any, families: Sequence[Family]) -> str:
    """The small families in one query (each query costs a few ms of planning); if it fails (a shard a
    migration behind lacks a table), family by family, skipping the ones that fail."""
    def run(chosen: Sequence[Family]) -> dict[str, str]:
        return scrape_lines(con, chosen)

    try:
        bodies = run(families)
    except Exception:
        bodies = {}
        for f in families:
            try:
                bodies.update(run([f]))
            except Exception as exc:
                log.debug("metrics: %s skipped: %s", f.name, str(exc).splitlines()[0] if str(exc) else exc)
                bodies[f.name] = ""
    return "".join(header(f) + bodies.get(f.name, "") for f in families if f.name in bodies)


def _gauge(name: str, help_: str, labels: Sequence[str],
           samples: Sequence[tuple[tuple[str, ...], float]]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, help_, labels=list(labels))
    for values, value in samples:
        fam.add_metric(list(values), value)
    return fam


def exposition_chunks(collector: CanaryCollector) -> list[bytes]:
    """One scrape, in chunks: the small families (prometheus_client) and the ones read from the snapshot(s)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return [generate_latest(registry), *collector.render()]


def exposition(collector: CanaryCollector) -> bytes:
    """One scrape, whole (`canary metrics --once`, tests); the server writes `exposition_chunks` one by one."""
    return b"".join(exposition_chunks(collector))


class _Handler(BaseHTTPRequestHandler):
    collector: CanaryCollector

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        chunks = exposition_chunks(self.collector)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        log.debug("metrics: " + format, *args)


def serve_metrics(dbs: Sequence[str | os.PathLike[str]], cfg: CanaryConfig, port: int,
                  addr: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Serve `GET /metrics` from a daemon thread; returns the server (`.shutdown()` stops it)."""
    collector = CanaryCollector(dbs, cfg)
    collector.render()  # read the snapshot(s) once before the first scrape
    handler = type("CanaryMetricsHandler", (_Handler,), {"collector": collector})
    server = ThreadingHTTPServer((addr, port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="canary-metrics", daemon=True).start()
    threading.Thread(target=_keep_fresh, args=(collector,), name="canary-metrics-refresh", daemon=True).start()
    return server


#: How often the served exporter looks for a new snapshot (a stat per shard) and reads it when there is one, so
#: that a scrape finds it read already instead of paying for it (~40 ms and ~9 MB at 100 models x 15 endpoints:
#: benchmarks/bench_metrics.py).
REFRESH_EVERY_S = 5.0


def _keep_fresh(collector: CanaryCollector) -> None:
    """For the life of the process (a daemon thread, like the server's)."""
    while True:
        time.sleep(REFRESH_EVERY_S)
        try:
            collector.render()
        except Exception as exc:  # the next scrape reads it itself and says so (canary_snapshot_up)
            log.warning("metrics: refresh failed: %s", type(exc).__name__)
