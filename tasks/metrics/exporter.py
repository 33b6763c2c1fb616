"""The Prometheus exporter: the canary's state, read from the analysts' snapshot, as exposition text.

    collector = CanaryCollector(["canary.duckdb"], cfg)      # one file, or several shards (as `canary catalog`)
    exposition(collector)                                    # one scrape (bytes)
    collector.scrape(gzip=True)                              # what the server writes: chunks, gzip or not
    serve_metrics(["canary.duckdb"], cfg, 9464)             # tasks/metrics/server.py: `canary metrics`, `serve`

The server (tasks/metrics/server.py) also answers `GET /lists/<model-slug>.json` (the published ignore lists).
Each scrape opens the snapshot(s) read-only (tasks/store/snapshot.py, tasks/store/catalog.py), never the live
file, so a scrape never blocks a round. It reads small tables only: the exposition text of the rollup's families
that each round's save transaction rendered for its model (`metric_text`, tasks/store/metric_text.py), the
policy state, the exclusions, the outbox, the rounds and the suspicions; never the attempts. What a snapshot
says is kept (as encoded chunks, never joined, and gzip-compressed once when a scraper asks for gzip) until the
snapshot changes (once a cycle); only the exclusions are worked out at every scrape (they follow the clock).
Every sample line is written by tasks/core/exposition.py (one renderer, one escaper).
Conventions (Prometheus, blackbox_exporter, Cloudprober, OpenTelemetry GenAI): base units (seconds, USD), `_total`
counters that only rise, `_timestamp_seconds` for instants, `canary_build_info` = 1; labels are bounded (models,
tags, enums; reasons via `bounded_reason`). With `live_source = "prometheus"`, `canary_live_source_up` says whether
the live evidence answers (tasks/watch/live_prometheus.py), asked by the refresh thread, never by a scrape.
"""

from __future__ import annotations

import logging
import os
import threading
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from tasks.config import CanaryConfig
from tasks.core.exclusions import load_builtin, merge_ignore_list
from tasks.core.exposition import header, sample_line, sample_lines
from tasks.core.types import Layer
from tasks.errors import StoreError
from tasks.runtime.clock import utcnow
from tasks.runtime.quiet_log import QuietLog
from tasks.store.metric_text import (
    SCRAPED,
    STORED,
    ExclusionRows,
    exclusion_rows,
    scrape_text,
    stored_text,
)
from tasks.store.metric_text import header as family_header
from tasks.store.snapshot import file_signature, snapshot_path
from tasks.store.snapshot_reader import detach_snapshot, open_snapshot
from tasks.watch.live_prometheus import HealthCache

log = logging.getLogger(__name__)
#: gzip level of the kept text: 9 MB compress in ~60 ms at level 1 (~25x smaller), once a snapshot.
GZIP_LEVEL = 1

#: Families the collector writes itself (name, type, help, labels), for the docs' table (ops/build.py).
OWN_FAMILIES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("canary_snapshot_up", "gauge", "1 if the snapshot(s) could be read at this scrape", ()),
    ("canary_build_info", "gauge", "The exporter's version (value 1)", ("version",)),
    ("canary_config_min_hosts", "gauge", "min_hosts: routable endpoints a suspension must leave", ()),
    ("canary_config_interval_seconds", "gauge", "interval_min, in seconds", ()),
    ("canary_config_budget_usd_per_day", "gauge", "budget_usd_per_day (0: no budget)", ()),
    ("canary_model_configured", "gauge", "1 for each model the exporter's config names (a model that never "
     "completed a round has no other series)", ("model",)),
    ("canary_snapshot_timestamp_seconds", "gauge", "When the shard's analysts' snapshot was published", ("shard",)),
    ("canary_endpoint_excluded", "gauge", "1 if the layer (builtin, operational, canary) keeps the endpoint out "
     "of traffic", ("model", "provider_tag", "layer")),
    ("canary_routable_endpoints", "gauge", "Endpoints of the model's latest round that no layer excludes",
     ("model",)),
    ("canary_live_source_up", "gauge", "live_source prometheus: 1 if it answers with a router's live counters", ()),
    ("canary_live_source_routers", "gauge", "live_source prometheus: router replicas whose counters it holds", ()),
)
_HELP = {name: (kind, help_) for name, kind, help_, _ in OWN_FAMILIES}


def build_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("provider-canary")
    except PackageNotFoundError:
        return "unknown"


def _own(name: str, samples: Sequence[tuple[Sequence[tuple[str, str]], float]]) -> str:
    kind, help_ = _HELP[name]
    return header(name, kind, help_) + "".join(sample_line(name, labels, value) for labels, value in samples)


@dataclass(frozen=True)
class _Kept:
    """What one snapshot says: its text in chunks, the exclusions' rows, and the chunks gzip-compressed with the
    compressor's state after them (`zlib` copies it, so each scrape appends only its own tail)."""

    signature: tuple[tuple[int, int] | None, ...]
    chunks: list[bytes]
    rows: ExclusionRows | None
    gz: list[tuple[list[bytes], Any]]  # [] until a scraper asks for gzip, then [(compressed chunks, compressor)]
    tail: dict[str, Any] = field(default_factory=dict)  # the exclusions' text while nothing in it can change


def next_change(rows: ExclusionRows, now: datetime) -> datetime:
    """When the exclusions worked out at `now` can next change by the clock alone: the first suspension or
    operational exclusion to run out after `now` (else never, until the snapshot or the builtin file changes)."""
    ends = [s.suspended_until for states in rows.states.values() for s in states]
    ends += [o.until for o in rows.operational]
    return min((t for t in ends if t is not None and t > now), default=datetime.max.replace(tzinfo=UTC))


class CanaryCollector:
    """The exposition of the snapshot(s): `scrape()` is what the server writes (module doc).

    `cfg` gives the builtin layer, the configured models and the thresholds the alert rules compare with
    (min_hosts, the interval, the budget)."""

    def __init__(self, dbs: Sequence[str | os.PathLike[str]], cfg: CanaryConfig,
                 now: Callable[[], datetime] = utcnow) -> None:
        self.dbs = [Path(d) for d in dbs]
        self.cfg = cfg
        self.now = now
        self._lock = threading.Lock()
        self._duck: Any = None  # the DuckDB instance each new snapshot is attached to (one file)
        self._kept: _Kept | None = None
        self._quiet = QuietLog(log)  # "no database yet" once, not at every refresh (every 5 s) until the first round
        self.live = HealthCache(cfg) if cfg.live_source == "prometheus" else None  # refreshed with the snapshot

    def _static(self, up: bool) -> str:
        cfg = self.cfg
        stamps = [((("shard", db.stem),), snap.stat().st_mtime) for db in self.dbs
                  if (snap := snapshot_path(db)).exists()]
        return "".join([
            _own("canary_snapshot_up", [((), 1 if up else 0)]),
            _own("canary_build_info", [((("version", build_version()),), 1)]),
            _own("canary_config_min_hosts", [((), cfg.min_hosts)]),
            _own("canary_config_interval_seconds", [((), cfg.interval_min * 60)]),
            _own("canary_config_budget_usd_per_day", [((), cfg.budget_usd_per_day)]),
            _own("canary_model_configured", [((("model", m),), 1) for m in dict.fromkeys(cfg.models)]),
            _own("canary_snapshot_timestamp_seconds", stamps),
        ])

    def refresh(self, gzip: bool = False) -> _Kept | None:
        """Read the snapshot(s) again if they changed (and compress the text if `gzip`); None if unreadable."""
        with self._lock:
            signature = tuple(file_signature(snapshot_path(db)) for db in self.dbs)
            kept = self._kept
            if kept is None or kept.signature != signature or None in signature:
                self._kept = kept = None  # the old text goes before the new one is read (peak RSS)
                try:
                    con = self._open()
                except StoreError as exc:
                    self._quiet.say("open", f"metrics: {exc}")
                    return None
                self._quiet.end("open", "metrics: the snapshot reads again")
                try:
                    chunks = [self._static(up=True).encode(), *_read_families(con)]
                    self._kept = kept = _Kept(signature, chunks, exclusion_rows(con), [])
                finally:
                    if con is self._duck:
                        detach_snapshot(con)
                    else:
                        con.close()
            if gzip and not kept.gz:
                compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: a gzip stream
                body = [c for chunk in kept.chunks if (c := compressor.compress(chunk))]
                body.append(compressor.flush(zlib.Z_SYNC_FLUSH))
                kept.gz.append((body, compressor))
            return kept

    def scrape(self, gzip: bool = False) -> list[bytes]:
        """One scrape in chunks, one gzip stream when `gzip`: the kept text, then the exclusions (worked out
        again only when the clock can have changed them: a suspension or an exclusion running out)."""
        kept = self.refresh(gzip)
        if kept is None:
            chunks = [(self._static(up=False) + self._live()).encode()]
            return [zlib.compress(chunks[0], GZIP_LEVEL, 31)] if gzip else chunks
        tail = self._tail(kept, gzip)
        return [*kept.gz[0][0], tail] if gzip else [*kept.chunks, tail]

    def _tail(self, kept: _Kept, gzip: bool) -> bytes:
        """The exclusions' text (gzip: the stream's end after the kept chunks), kept until `next_change` or a
        change of the builtin exclusions file."""
        now, live = self.now(), self._live()
        key = (file_signature(Path(self.cfg.exclusions_file)), live)
        with self._lock:
            t = kept.tail
            if not t or t["key"] != key or now >= t["until"]:
                t.clear()
                t.update(key=key, until=next_change(kept.rows, now) if kept.rows else now,
                         text=(self._exclusions(kept.rows, now) + live).encode())
            if not gzip:
                return bytes(t["text"])
            if "gz" not in t:
                last = kept.gz[0][1].copy()
                t["gz"] = last.compress(t["text"]) + last.flush()
            return bytes(t["gz"])

    def _live(self) -> str:
        """The live source's last answer (asked now only before the refresh thread did)."""
        if self.live is None:
            return ""
        health = self.live.last or self.live.refresh()
        return (_own("canary_live_source_up", [((), int(health.up))])
                + _own("canary_live_source_routers", [((), health.routers)]))

    def _open(self) -> Any:
        """The snapshot attached to the kept instance (one file), or a catalog over several (a new instance)."""
        from tasks.store.catalog import open_catalog

        if len(self.dbs) > 1:
            return open_catalog(list(self.dbs), threads=1)  # small queries: one thread is faster and lighter
        if self._duck is None:
            self._duck = duckdb.connect(config={"threads": 1})
        return open_snapshot(self.dbs[0], into=self._duck)

    def _exclusions(self, rows: ExclusionRows | None, now: datetime) -> str:
        """`canary_endpoint_excluded{layer}` and `canary_routable_endpoints{model}`: the ignore list's layers
        over the endpoints of each model's latest complete full round (what the capacity floor counts)."""
        if rows is None:
            return ""
        builtin = load_builtin(self.cfg.exclusions_file)
        excluded: list[str] = []
        routable: list[tuple[Sequence[tuple[str, str]], float]] = []
        layers = [str(layer) for layer in Layer]
        for model, tags in rows.latest:
            ignore = merge_ignore_list(model, tags, builtin, rows.operational, rows.states.get(model, []), now)
            hit = {(e.tag, str(e.layer)) for e in ignore.entries}
            excluded += [sample_lines("canary_endpoint_excluded", (("model", model), ("provider_tag", tag)), "layer",
                                      [(layer, int((tag, layer) in hit)) for layer in layers]) for tag in sorted(tags)]
            routable.append(((("model", model),), sum(1 for t in tags if t not in ignore.ignore)))
        kind, help_ = _HELP["canary_endpoint_excluded"]
        return (header("canary_endpoint_excluded", kind, help_) + "".join(excluded)
                + _own("canary_routable_endpoints", routable))

def _read_families(con: Any) -> list[bytes]:
    """Every family read from the snapshot: the stored text (a header, then one chunk per model), then the
    families rendered now; a family whose query fails (a shard a migration behind) is skipped. The stored rows
    are grouped here, not by an ORDER BY (DuckDB would hold a sorted copy of the ~9 MB: slower, heavier)."""
    rows = stored_text(con)
    stored: dict[str, list[tuple[str, bytes]]] = {}
    batches: Any = [] if rows is None else [rows] if isinstance(rows, list) else iter(lambda: rows.fetchmany(64), [])
    for batch in batches:
        for family, model, body in batch:
            stored.setdefault(family, []).append((model, body.encode()))
    chunks: list[bytes] = []
    for f in STORED:
        if f.name in stored:
            chunks.append(family_header(f).encode())
            chunks += [body for _, body in sorted(stored.pop(f.name), key=lambda mb: mb[0])]
    bodies = scrape_text(con, SCRAPED)
    chunks.append("".join(family_header(f) + bodies[f.name] for f in SCRAPED if f.name in bodies).encode())
    return chunks


def exposition_chunks(collector: CanaryCollector) -> list[bytes]:
    """One scrape, in chunks (what the server writes one by one, never joined)."""
    return collector.scrape()


def exposition(collector: CanaryCollector) -> bytes:
    """One scrape, whole (`canary metrics --once`, tests)."""
    return b"".join(collector.scrape())
