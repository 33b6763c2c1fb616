"""The Prometheus exporter's collector: the canary's state, read from the analysts' snapshot at each scrape.

    registry = metrics_registry(["canary.duckdb"], cfg)      # one file, or several shards (as `canary catalog`)
    start_http_server(9464, registry=registry)              # `canary metrics`; `canary serve` does the same

Each scrape opens the snapshot(s) read-only (tasks/store/snapshot.py, tasks/store/catalog.py), never the live
file, so a scrape never blocks a round. It reads small tables only: the rollup the round's save transaction
keeps (tasks/store/metric_rollup.py), the policy state, the exclusions, the outbox and the rounds; never the
attempts. A family is one `Family(...)` line in `FAMILIES`: its name, type, help, labels and a query whose
columns are the label values then the value. Conventions (Prometheus, blackbox_exporter, Cloudprober,
OpenTelemetry GenAI): base units (seconds, USD), `_total` counters, `_timestamp_seconds` for instants,
`canary_build_info` = 1; labels are bounded (models, tags, enums; reasons via `bounded_reason`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from tasks.clock import utcnow
from tasks.config import CanaryConfig
from tasks.core.exclusions import load_builtin, merge_ignore_list
from tasks.core.metric_rollup import DURATION, FAILURES, FIRST_CHUNK, INF, OUTCOMES, REQUESTS, SPEND
from tasks.core.types import EndpointState, Layer, Mode, OperationalExclusion
from tasks.errors import StoreError

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
    Family("canary_probe_outcome", "gauge", "The last round's outcome and bounded reason of each contract "
           "(value 1)", (*EPC, "outcome", "reason"),
           "SELECT model, tag, contract, outcome, reason, 1 FROM metric_last_probe"),
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
    (DURATION, "GenAI operation duration: probe requests, from sending to the last byte"),
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

    return open_snapshot(dbs[0]) if len(dbs) == 1 else open_catalog(list(dbs))


class CanaryCollector(Collector):
    """Reads the snapshot(s) of `dbs` at each `collect()`; `cfg` gives the builtin layer and the thresholds
    the alert rules compare with (min_hosts, the interval, the budget)."""

    def __init__(self, dbs: Sequence[str | os.PathLike[str]], cfg: CanaryConfig,
                 now: Callable[[], datetime] = utcnow) -> None:
        self.dbs = [Path(d) for d in dbs]
        self.cfg = cfg
        self.now = now

    def describe(self) -> list[Metric]:
        return []  # families depend on the data; no describe-time query

    def collect(self) -> Iterator[Metric]:
        yield from self._static()
        try:
            con = _open(self.dbs)
        except StoreError as exc:
            log.warning("metrics: %s", exc)
            yield _gauge("canary_snapshot_up", "1 if the snapshot(s) could be read at this scrape", (), [((), 0)])
            return
        try:
            yield _gauge("canary_snapshot_up", "1 if the snapshot(s) could be read at this scrape", (), [((), 1)])
            yield from self._families(con)
            yield from self._histograms(con)
            yield from self._exclusions(con)
        finally:
            con.close()

    def _static(self) -> Iterator[Metric]:
        from tasks.store.snapshot import snapshot_path

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

    def _families(self, con: Any) -> Iterator[Metric]:
        for f in FAMILIES:
            try:
                rows = con.execute(f.sql).fetchall()
            except Exception as exc:  # a shard one migration behind lacks a table: skip the family
                log.debug("metrics: %s skipped: %s", f.name, str(exc).splitlines()[0] if str(exc) else exc)
                continue
            samples = [(tuple(str(v) for v in r[:-1]), float(r[-1])) for r in rows if r[-1] is not None]
            if f.kind == "counter":
                fam: Metric = CounterMetricFamily(f.name.removesuffix("_total"), f.help, labels=f.labels)
                for labels, value in samples:
                    fam.add_metric(labels, value)  # type: ignore[attr-defined]
                yield fam
            else:
                yield _gauge(f.name, f.help, f.labels, samples)

    def _histograms(self, con: Any) -> Iterator[Metric]:
        try:
            buckets = con.execute("SELECT name, model, tag, le, sum(count) FROM metric_buckets GROUP BY ALL"
                                  " ORDER BY name, model, tag, le").fetchall()
            sums = {(n.removesuffix("_sum"), m, t): v for n, m, t, v in con.execute(
                "SELECT name, model, tag, sum(value) FROM metric_counters WHERE name LIKE '%_seconds_sum'"
                " GROUP BY ALL").fetchall()}
        except Exception:  # before migration 11
            return
        series: dict[tuple[str, str, str], dict[float, float]] = {}
        for name, model, tag, le, count in buckets:
            series.setdefault((name, model, tag), {})[float(le)] = float(count)
        extra = tuple(GENAI_LABELS)
        for name, help_ in HISTOGRAMS:
            fam = HistogramMetricFamily(name.removesuffix("_seconds"), help_, unit="seconds",
                                        labels=(*extra, "gen_ai_request_model", "endpoint"))
            for (n, model, tag), counts in sorted(series.items()):
                if n != name:
                    continue
                cumulative, running = [], 0.0
                for le in (*_boundaries(), INF):
                    running = max(running, counts.get(le, running))
                    cumulative.append((_le(le), running))
                fam.add_metric([*GENAI_LABELS.values(), model, tag], cumulative,
                               sum_value=sums.get((n, model, tag), 0.0))
            yield fam

    def _exclusions(self, con: Any) -> Iterator[Metric]:
        """`canary_endpoint_excluded{layer}` and `canary_routable_endpoints{model}`: the ignore list's layers
        over the endpoints of each model's latest complete full round (what the capacity floor counts)."""
        now = self.now()
        try:
            latest = con.execute(
                "SELECT model, arg_max(endpoints, round_ts) FROM rounds WHERE status = 'complete'"
                " AND NOT coalesce(partial, false) GROUP BY model").fetchall()
            states = con.execute(
                "SELECT model, tag, ladder_step, suspended_until FROM endpoint_state WHERE mode = 'enforce'"
                " AND suspended_until IS NOT NULL").fetchall()
            ops = con.execute(
                "SELECT tag, model, reason, who, added_at, until FROM exclusions WHERE removed_at IS NULL"
                " AND (until IS NULL OR until > ?)", [now]).fetchall()
        except Exception as exc:
            log.debug("metrics: exclusions skipped: %s", exc)
            return
        path = Path(self.cfg.exclusions_file)
        builtin = load_builtin(path) if path.exists() else []
        operational = [OperationalExclusion(tag=t, model=m, reason=r, who=w, added_at=a, until=u)
                       for t, m, r, w, a, u in ops]
        by_model: dict[str, list[EndpointState]] = {}
        for model, tag, step, until in states:
            by_model.setdefault(model, []).append(
                EndpointState(model=model, tag=tag, mode=Mode.ENFORCE, ladder_step=step, suspended_until=until))
        excluded: list[tuple[tuple[str, ...], float]] = []
        routable: list[tuple[tuple[str, ...], float]] = []
        layers = [str(layer) for layer in Layer]
        for model, tags in latest:
            ignore = merge_ignore_list(model, tags or [], builtin, operational, by_model.get(model, []), now)
            hit = {(e.tag, str(e.layer)) for e in ignore.entries}
            for tag in sorted(tags or []):
                for layer in layers:
                    excluded.append(((model, tag, layer), float((tag, layer) in hit)))
            routable.append(((model,), float(sum(1 for t in tags or [] if t not in ignore.ignore))))
        yield _gauge("canary_endpoint_excluded", "1 if the layer (builtin, operational, canary) keeps the endpoint "
                     "out of traffic", (*EP, "layer"), excluded)
        yield _gauge("canary_routable_endpoints", "Endpoints of the model's latest round that no layer excludes",
                     ("model",), routable)


def _boundaries() -> tuple[float, ...]:
    from tasks.core.metric_rollup import GENAI_BUCKETS_S

    return GENAI_BUCKETS_S


def _le(value: float) -> str:
    return "+Inf" if value == INF else repr(value)


def _gauge(name: str, help_: str, labels: Sequence[str],
           samples: Sequence[tuple[tuple[str, ...], float]]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, help_, labels=list(labels))
    for values, value in samples:
        fam.add_metric(list(values), value)
    return fam


def metrics_registry(dbs: Sequence[str | os.PathLike[str]], cfg: CanaryConfig) -> CollectorRegistry:
    """A registry holding only the canary's collector (no process metrics: several may share a process)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CanaryCollector(dbs, cfg))
    return registry


def serve_metrics(dbs: Sequence[str | os.PathLike[str]], cfg: CanaryConfig, port: int,
                  addr: str = "127.0.0.1") -> Any:
    """Start the exposition endpoint in a daemon thread; returns the server (`.shutdown()` stops it)."""
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=addr, registry=metrics_registry(dbs, cfg))
    return server
