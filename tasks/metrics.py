"""The Prometheus exporter's collector: the canary's state, read from the analysts' snapshot at each scrape.

    collector = CanaryCollector(["canary.duckdb"], cfg)      # one file, or several shards (as `canary catalog`)
    exposition(collector)                                    # one scrape (bytes)
    serve_metrics(["canary.duckdb"], cfg, 9464)             # `canary metrics`; `canary serve --metrics-port`

Each scrape opens the snapshot(s) read-only (tasks/store/snapshot.py, tasks/store/catalog.py), never the live
file, so a scrape never blocks a round. It reads small tables only: the rollup the round's save transaction
keeps (tasks/store/metric_rollup.py), the policy state, the exclusions, the outbox and the rounds; never the
attempts. What a snapshot says is kept until the snapshot changes (once a cycle). A family is one `Family(...)`
line in `FAMILIES`: its name, type, help, labels and a query whose columns are the label values then the value.
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
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from tasks.clock import utcnow
from tasks.config import CanaryConfig
from tasks.core.exclusions import load_builtin, merge_ignore_list
from tasks.core.metric_rollup import DURATION, FAILURES, FIRST_CHUNK, OUTCOMES, REQUESTS, SPEND
from tasks.core.types import EndpointState, Layer, Mode, OperationalExclusion
from tasks.errors import StoreError
from tasks.store.snapshot import file_signature, snapshot_path

log = logging.getLogger(__name__)
EP = ("model", "endpoint")
EPC = ("model", "endpoint", "contract")


@dataclass(frozen=True, slots=True)
class Family:
    """One metric family read by one query: its columns are the label values in `labels` order, then the value."""

    name: str
    kind: str  # "gauge" | "counter"
    help: str
    labels: tuple[str, ...]
    sql: str


def _counter(name: str, help_: str, label: str, per_contract: bool = True) -> Family:
    cols = "model, tag, contract" if per_contract else "model, tag"
    labels = (*EPC, label) if per_contract else (*EP, label)
    return Family(name, "counter", help_, labels,
                  f"SELECT {cols}, label, sum(value) FROM metric_counters WHERE name = '{name}' GROUP BY ALL")


FAMILIES: tuple[Family, ...] = (
    Family("canary_probe_success", "gauge", "1 if the contract passed in the endpoint's last round, 0 if it "
           "failed or was transport (inconclusive: no sample)", EPC,
           "SELECT model, tag, contract, (outcome = 'pass')::INT FROM metric_last_probe"
           " WHERE outcome <> 'inconclusive'"),
    Family("canary_probe_outcome", "gauge", "The last round's outcome and bounded reason of each contract that "
           "did not pass (value 1)", (*EPC, "outcome", "reason"),
           "SELECT model, tag, contract, outcome, reason, 1 FROM metric_last_probe WHERE outcome <> 'pass'"),
    Family("canary_probe_time_to_first_token_seconds", "gauge", "Time to the first text chunk of the "
           "contract's first attempt in the last round", EPC,
           "SELECT model, tag, contract, ttft_s FROM metric_last_probe WHERE ttft_s IS NOT NULL"),
    Family("canary_probe_duration_seconds", "gauge", "Whole duration of the contract's first attempt in the "
           "last round", EPC,
           "SELECT model, tag, contract, duration_s FROM metric_last_probe WHERE duration_s IS NOT NULL"),
    Family("canary_probe_weak", "gauge", "1 if the last round's refusal probe was weak (a positive control "
           "passed: refusal outcomes are inconclusive)", ("model",),
           "SELECT model, max((reason = 'probe_weak')::INT) FROM metric_last_probe GROUP BY model"),
    _counter(OUTCOMES, "Contract outcomes per round, by outcome", "outcome"),
    _counter(FAILURES, "Contract outcomes fail and transport, by bounded reason", "reason"),
    _counter(REQUESTS, "Probe HTTP requests (attempts), by error class (none: the exchange completed)",
             "error_type"),
    _counter(SPEND, "USD spent on probes (reported by the upstream, else estimated from listed pricing)",
             "basis", per_contract=False),
    Family("canary_endpoint_suspension_end_timestamp_seconds", "gauge", "When the endpoint's suspension ends "
           "(observe mode: the shadow suspension)", (*EP, "mode"),
           "SELECT model, tag, mode, epoch(suspended_until) FROM endpoint_state WHERE suspended_until IS NOT NULL"),
    Family("canary_endpoint_floor_blocked", "gauge", "1 while a suspension is held back by the capacity floor "
           "(min_hosts)", (*EP, "mode"),
           "SELECT model, tag, mode, floor_blocked::INT FROM endpoint_state"),
    Family("canary_endpoint_fail_streak", "gauge", "Consecutive failing rounds counted toward a suspension",
           (*EP, "mode"), "SELECT model, tag, mode, fail_streak FROM endpoint_state"),
    Family("canary_round_last_success_timestamp_seconds", "gauge", "round_ts of the model's latest complete "
           "round", ("model",),
           "SELECT model, epoch(max(round_ts)) FROM rounds WHERE status = 'complete' GROUP BY model"),
    Family("canary_rounds_total", "counter", "Rounds by status (running, complete, crashed)",
           ("model", "status"), "SELECT model, status, count(*) FROM rounds GROUP BY ALL"),
    Family("canary_alerts", "gauge", "Alerts in the outbox by delivery status", ("status",),
           "SELECT status, count(*) FROM alerts GROUP BY ALL"),
    Family("canary_alerts_pending", "gauge", "Alerts queued in the outbox and not yet delivered", (),
           "SELECT count(*) FROM alerts WHERE status = 'pending'"),
    Family("canary_alerts_oldest_pending_timestamp_seconds", "gauge", "created_at of the oldest undelivered "
           "alert", (), "SELECT epoch(min(created_at)) FROM alerts WHERE status = 'pending' HAVING count(*) > 0"),
    Family("canary_schema_version", "gauge", "Applied DuckDB schema migration", (),
           "SELECT max(version) FROM schema_migrations"),
)

#: The GenAI client histograms (OpenTelemetry names, Prometheus spelling), from `metric_buckets`.
HISTOGRAMS: tuple[tuple[str, str], ...] = (
    (DURATION, "GenAI operation duration: probe requests of the model, from sending to the last byte"),
    (FIRST_CHUNK, "Time to receive the first text chunk of a streamed probe, from sending the request"),
)
GENAI_LABELS = {"gen_ai_operation_name": "chat", "gen_ai_provider_name": "openrouter"}


def build_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("provider-canary")
    except PackageNotFoundError:
        return "unknown"


def _open(dbs: Sequence[Path]) -> Any:
    from tasks.store.catalog import open_catalog
    from tasks.store.snapshot import open_snapshot

    con = open_snapshot(dbs[0]) if len(dbs) == 1 else open_catalog(list(dbs))
    con.execute("SET threads = 1")  # small queries: one thread is faster and lighter than two (bench_metrics)
    return con


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
        self._cache: tuple[tuple[tuple[int, int] | None, ...], str, ExclusionRows | None] | None = None

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

    def render(self) -> str:
        """The families read from the snapshot(s), as exposition text rendered by DuckDB (prometheus_client's
        own formatter costs ~20 us a sample: seconds at 100 models x 15 endpoints).

        The snapshot changes once a cycle: what it says is kept, keyed by the snapshots' (mtime, size), so the
        scrapes between two rounds open nothing. Only the exclusions are worked out again at every scrape,
        from the kept rows, because they depend on the time (a suspension or an exclusion running out)."""
        up = "# HELP canary_snapshot_up 1 if the snapshot(s) could be read at this scrape\n" \
             "# TYPE canary_snapshot_up gauge\ncanary_snapshot_up {}\n"
        with self._lock:
            signature = tuple(file_signature(snapshot_path(db)) for db in self.dbs)
            if self._cache is None or self._cache[0] != signature or None in signature:
                try:
                    con = _open(self.dbs)
                except StoreError as exc:
                    log.warning("metrics: %s", exc)
                    self._cache = None
                    return up.format(0)
                try:
                    parts = [_render_families(con, FAMILIES)]
                    parts += [_render_histogram(con, name, help_) for name, help_ in HISTOGRAMS]
                    self._cache = (signature, "".join(parts), _exclusion_rows(con))
                finally:
                    con.close()
            _, text, rows = self._cache
        return up.format(1) + text + self._exclusions(rows)

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


@dataclass(frozen=True, slots=True)
class ExclusionRows:
    """What the exclusion gauges need from the snapshot (small: one row per model, suspension, exclusion)."""

    latest: list[tuple[str, list[str]]]  # model -> endpoints of its latest complete full round
    states: dict[str, list[EndpointState]]  # enforce-mode states with a suspension, per model
    operational: list[OperationalExclusion]  # not removed (expiry is checked at each scrape)


def _exclusion_rows(con: Any) -> ExclusionRows | None:
    try:
        latest = con.execute(
            "SELECT model, arg_max(endpoints, round_ts) FROM rounds WHERE status = 'complete'"
            " AND NOT coalesce(partial, false) GROUP BY model ORDER BY model").fetchall()
        states = con.execute(
            "SELECT model, tag, ladder_step, suspended_until FROM endpoint_state WHERE mode = 'enforce'"
            " AND suspended_until IS NOT NULL").fetchall()
        ops = con.execute(
            "SELECT tag, model, reason, who, added_at, until FROM exclusions WHERE removed_at IS NULL").fetchall()
    except Exception as exc:
        log.debug("metrics: exclusions skipped: %s", exc)
        return None
    by_model: dict[str, list[EndpointState]] = {}
    for model, tag, step, until in states:
        by_model.setdefault(model, []).append(
            EndpointState(model=model, tag=tag, mode=Mode.ENFORCE, ladder_step=step, suspended_until=until))
    return ExclusionRows([(m, list(tags or [])) for m, tags in latest], by_model,
                         [OperationalExclusion(tag=t, model=m, reason=r, who=w, added_at=a, until=u)
                          for t, m, r, w, a, u in ops])


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _header(name: str, kind: str, help_: str) -> str:
    text = help_.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {name} {text}\n# TYPE {name} {kind}\n"


_SQL_ESCAPE = "replace(replace(replace(CAST({} AS VARCHAR), '\\', '\\\\'), '\"', '\\\"'), chr(10), '\\n')"


def _family_lines_sql(index: int, f: Family) -> str:
    """SELECT (family index, one exposition line) per row of `f.sql`, formatted by DuckDB."""
    cols = [f"c{i}" for i in range(len(f.labels))]
    labels = " || ',' || ".join(f"'{label}=\"' || {_SQL_ESCAPE.format(c)} || '\"'" for label, c in
                                zip(f.labels, cols, strict=True))
    braces = f"'{{' || {labels} || '}}' || " if labels else ""
    return (f"SELECT {index} AS family, '{f.name}' || {braces}' ' || CAST(v::DOUBLE AS VARCHAR) AS line "
            f"FROM ({f.sql}) q({', '.join([*cols, 'v'])}) WHERE v IS NOT NULL")


def _render_families(con: Any, families: Sequence[Family]) -> str:
    """Every family's lines in one query (each query costs a few ms of planning); if it fails (a shard a
    migration behind lacks a table), family by family, skipping the ones that fail."""
    def run(chosen: Sequence[tuple[int, Family]]) -> dict[int, str]:
        union = "\nUNION ALL\n".join(_family_lines_sql(i, f) for i, f in chosen)
        rows = con.execute(f"SELECT family, string_agg(line, chr(10)) FROM ({union}) "
                           "GROUP BY family").fetchall()
        return {int(i): str(text) for i, text in rows}

    indexed = list(enumerate(families))
    try:
        bodies = run(indexed)
    except Exception:
        bodies = {}
        for i, f in indexed:
            try:
                bodies.update(run([(i, f)]))
            except Exception as exc:
                log.debug("metrics: %s skipped: %s", f.name, str(exc).splitlines()[0] if str(exc) else exc)
                bodies[i] = ""
    return "".join(_header(f.name, f.kind, f.help) + (bodies[i] + "\n" if bodies.get(i) else "")
                   for i, f in indexed if i in bodies)


def _render_histogram(con: Any, name: str, help_: str) -> str:
    """A GenAI histogram from `metric_buckets` (cumulative counts at every boundary) and the `<name>_sum`
    counter."""
    fixed = ",".join(f'{k}="{v}"' for k, v in GENAI_LABELS.items())
    labels = (f"'{fixed},gen_ai_request_model=\"' || {_SQL_ESCAPE.format('model')} || '\"' || CASE WHEN tag = ''"
              f" THEN '' ELSE ',endpoint=\"' || {_SQL_ESCAPE.format('tag')} || '\"' END")
    sql = f"""
        WITH b AS (SELECT model, tag, le, sum(count) AS n FROM metric_buckets WHERE name = ? GROUP BY ALL),
             sums AS (SELECT model, tag, sum(value) AS v FROM metric_counters WHERE name = ? GROUP BY ALL),
             lines AS (
                SELECT model, tag, 0 AS kind, le, 'bucket' AS suffix,
                       ',le="' || CASE WHEN le = 'inf'::DOUBLE THEN '+Inf' ELSE CAST(le AS VARCHAR) END
                       || '"' AS le_label, n::DOUBLE AS v FROM b
                UNION ALL SELECT model, tag, 1, 0, 'sum', '', coalesce(u.v, 0)::DOUBLE
                          FROM b LEFT JOIN sums u USING (model, tag) WHERE b.le = 'inf'::DOUBLE
                UNION ALL SELECT model, tag, 2, 0, 'count', '', n::DOUBLE FROM b WHERE le = 'inf'::DOUBLE)
        SELECT string_agg(? || '_' || suffix || '{{' || {labels} || le_label || '}} ' || CAST(v AS VARCHAR),
                          chr(10) ORDER BY model, tag, kind, le)
        FROM lines"""
    try:
        row = con.execute(sql, [name, name + "_sum", name]).fetchone()
    except Exception as exc:  # before migration 10
        log.debug("metrics: %s skipped: %s", name, exc)
        return ""
    body = row[0] + "\n" if row and row[0] else ""
    return _header(name, "histogram", help_) + body


def _gauge(name: str, help_: str, labels: Sequence[str],
           samples: Sequence[tuple[tuple[str, ...], float]]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, help_, labels=list(labels))
    for values, value in samples:
        fam.add_metric(list(values), value)
    return fam


def exposition(collector: CanaryCollector) -> bytes:
    """One scrape: the small families (prometheus_client) and the ones read from the snapshot(s)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry) + collector.render().encode()


class _Handler(BaseHTTPRequestHandler):
    collector: CanaryCollector

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        body = exposition(self.collector)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

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
#: that a scrape finds it read already instead of paying for it (~0.4 s at 100 models x 15 endpoints).
REFRESH_EVERY_S = 5.0


def _keep_fresh(collector: CanaryCollector) -> None:
    """For the life of the process (a daemon thread, like the server's)."""
    while True:
        time.sleep(REFRESH_EVERY_S)
        try:
            collector.render()
        except Exception as exc:  # the next scrape reads it itself and says so (canary_snapshot_up)
            log.warning("metrics: refresh failed: %s", type(exc).__name__)
