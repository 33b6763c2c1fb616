"""The exposition text of the exporter's families read from DuckDB: the large ones rendered per model inside the
round's save transaction, the small ones at each new snapshot.

    render_model_text(con, "openai/gpt-4o")      # after roll_up_round, in the same transaction
    stored_text(con)                             # what a scrape reads: (family, model, body) rows
    scrape_text(con, SCRAPED)                    # the small families, rendered from the snapshot now

The families read from the metrics rollup (tasks/store/metric_rollup.py) are per model, endpoint and contract:
~75k samples (~9 MB of text) at 100 models x 15 endpoints. Rendering them at each new snapshot cost a scrape
~200 ms and ~140 MB (benchmarks/bench_metrics.py), more than the scan of `attempts` they replace. A round
changes one model's rollup rows only, so the save transaction renders that model's sample lines into
`metric_text` (migration 11): one row per (family, model), its `body` the sample lines, no HELP/TYPE header. A
scrape then only concatenates stored text under each family's header (tasks/metrics/exporter.py).

Every line is written by the one renderer, tasks/core/exposition.py (its one escaper: hostile model ids and
tags stay one sample each); the queries only select label values and a value. A family is one `Family(...)`
line in `FAMILIES`: its name, type, help, labels and a query whose columns are the label values then the value.
`per_model` families (the rollup's: model is their first column) are stored; the others (policy state, rounds,
outbox, suspicions: small) are rendered at each new snapshot.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tasks.core.exposition import family_lines, histogram_lines
from tasks.core.exposition import header as exposition_header
from tasks.core.metric_rollup import DURATION, FAILURES, FIRST_CHUNK, OUTCOMES, REQUESTS, SPEND
from tasks.core.suspicion import SuspicionStatus
from tasks.core.types import EndpointState, Mode, OperationalExclusion
from tasks.store.rows import Connection, insert_rows

log = logging.getLogger("canary.metrics")

#: An endpoint's labels. `provider_tag`, not `endpoint`: prometheus-operator's ServiceMonitor sets its own
#: `endpoint` target label, which would rename ours `exported_endpoint` on Kubernetes.
EP = ("model", "provider_tag")
EPC = ("model", "provider_tag", "contract")
#: The schema version whose stored text this code renders (older text is rendered again from the rollup).
TEXT_VERSION = 14


@dataclass(frozen=True, slots=True)
class Family:
    """One metric family read by one query: its columns are the label values in `labels` order, then the value."""

    name: str
    kind: str  # "gauge" | "counter" | "histogram"
    help: str
    labels: tuple[str, ...]
    sql: str
    per_model: bool = False  # rendered per model in the save transaction (`labels[0]` is the model)


def _counter(name: str, help_: str, label: str, per_contract: bool = True) -> Family:
    cols = "model, tag, contract" if per_contract else "model, tag"
    labels = (*EPC, label) if per_contract else (*EP, label)
    return Family(name, "counter", help_, labels,
                  f"SELECT {cols}, label, sum(value) FROM metric_counters WHERE name = '{name}' GROUP BY ALL",
                  per_model=True)


_OPEN = SuspicionStatus.SCHEDULED.value

FAMILIES: tuple[Family, ...] = (
    Family("canary_probe_success", "gauge", "1 if the contract passed in the endpoint's last round, 0 if it "
           "failed or was transport (inconclusive: no sample)", EPC,
           "SELECT model, tag, contract, (outcome = 'pass')::INT FROM metric_last_probe"
           " WHERE outcome <> 'inconclusive'", per_model=True),
    Family("canary_probe_outcome", "gauge", "The last round's outcome and bounded reason of each contract that "
           "did not pass (value 1)", (*EPC, "outcome", "reason"),
           "SELECT model, tag, contract, outcome, reason, 1 FROM metric_last_probe WHERE outcome <> 'pass'",
           per_model=True),
    Family("canary_probe_time_to_first_token_seconds", "gauge", "Time to the first text chunk of the "
           "contract's first attempt in the last round", EPC,
           "SELECT model, tag, contract, ttft_s FROM metric_last_probe WHERE ttft_s IS NOT NULL", per_model=True),
    Family("canary_probe_duration_seconds", "gauge", "Whole duration of the contract's first attempt in the "
           "last round", EPC,
           "SELECT model, tag, contract, duration_s FROM metric_last_probe WHERE duration_s IS NOT NULL",
           per_model=True),
    Family("canary_probe_weak", "gauge", "1 if the last round's refusal probe was weak (a positive control "
           "passed: refusal outcomes are inconclusive)", ("model",),
           "SELECT model, max((reason = 'probe_weak')::INT) FROM metric_last_probe GROUP BY model", per_model=True),
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
    Family("canary_rounds_total", "counter", "Rounds that ended, by final status (complete, crashed, failed); "
           "a round counts once per status it ended in (`round_ends`: rows are only ever added)",
           ("model", "status"), "SELECT model, status, count(*) FROM round_ends GROUP BY ALL"),
    Family("canary_rounds_running", "gauge", "Rounds of the model that have started and not ended (0 or 1 "
           "normally; a dead round's row stays running until the next round of its model marks it crashed)",
           ("model",), "SELECT model, count(*) FILTER (WHERE status = 'running') FROM rounds GROUP BY model"),
    Family("canary_suspicions_open", "gauge", "Suspicions (live failures, an uptime drop) whose confirmation "
           "round has not landed yet", ("model",),
           "SELECT r.model, count(s.suspicion_id) FROM (SELECT DISTINCT model FROM rounds) r LEFT JOIN suspicions s"
           f" ON s.model = r.model AND s.status = '{_OPEN}' GROUP BY r.model"),
    Family("canary_alerts", "gauge", "Alerts in the outbox by delivery status", ("status",),
           "SELECT status, count(*) FROM alerts GROUP BY ALL"),
    Family("canary_alerts_failed_total", "counter", "Alerts Slack refused for good (never retried; `failed` is "
           "final and outbox rows are never deleted)", (),
           "SELECT count(*) FROM alerts WHERE status = 'failed'"),
    Family("canary_alerts_pending", "gauge", "Alerts queued in the outbox and not yet delivered", (),
           "SELECT count(*) FROM alerts WHERE status = 'pending'"),
    Family("canary_alerts_oldest_pending_timestamp_seconds", "gauge", "created_at of the oldest undelivered "
           "alert", (), "SELECT epoch(min(created_at)) FROM alerts WHERE status = 'pending' HAVING count(*) > 0"),
    Family("canary_schema_version", "gauge", "Applied DuckDB schema migration", (),
           "SELECT max(version) FROM schema_migrations"),
)
SCRAPED: tuple[Family, ...] = tuple(f for f in FAMILIES if not f.per_model)  # rendered at each new snapshot


@dataclass(frozen=True, slots=True)
class Histogram:
    """A GenAI client histogram (OpenTelemetry name, Prometheus spelling), from `metric_buckets`; per model."""

    name: str
    help: str
    labels: tuple[str, ...]  # every label it can carry (`le` aside), for the docs
    kind: str = "histogram"
    per_model: bool = True


#: The GenAI semantic conventions' attributes, Prometheus spelling: fixed for every probe.
GENAI_LABELS: tuple[tuple[str, str], ...] = (("gen_ai_operation_name", "chat"),
                                             ("gen_ai_provider_name", "openrouter"))
_GENAI = ("gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model")
HISTOGRAMS: tuple[Histogram, ...] = (
    Histogram(DURATION, "GenAI operation duration: probe requests of the model, from sending to the last byte; "
              "error_type (GenAI error.type) on the requests that ended in an error", (*_GENAI, "error_type")),
    Histogram(FIRST_CHUNK, "Time to receive the first text chunk of a streamed probe, from sending the request",
              (*_GENAI, "provider_tag")),
)
STORED: tuple[Family | Histogram, ...] = (*(f for f in FAMILIES if f.per_model), *HISTOGRAMS)


def header(f: Family | Histogram) -> str:
    return exposition_header(f.name, f.kind, f.help)


def _named(f: Family) -> tuple[list[str], str]:
    """The family's query with its columns named c0, c1, ... (the labels) and v (the value)."""
    cols = [f"c{i}" for i in range(len(f.labels))]
    return cols, f"({f.sql}) q({', '.join([*cols, 'v'])})"


def _family_rows(con: Any, f: Family, model: str | None = None) -> list[Any]:
    """The family's rows (label values, value) in label order: of one model (the first column), or all."""
    cols, source = _named(f)
    where = "WHERE c0 = ?" if model is not None else ""
    return list(con.execute(f"SELECT * FROM {source} {where} ORDER BY {', '.join(cols) or '1'}",
                            [model] if model is not None else []).fetchall())


def _family_bodies(con: Any, f: Family, model: str | None) -> dict[str, str]:
    """Model -> the family's sample lines (of one model, or of every model: the first column)."""
    by_model: defaultdict[str, list[Any]] = defaultdict(list)
    for row in _family_rows(con, f, model):
        by_model[str(row[0])].append(row)
    return {m: body for m, rs in by_model.items() if (body := family_lines(f.name, f.labels, rs))}


def _histogram_bodies(con: Any, h: Histogram, model: str | None) -> dict[str, str]:
    """Model -> the histogram's lines: per (tag, error type) its cumulative buckets, `_sum` and `_count`."""
    where, params = ("AND model = ?", [h.name, model]) if model is not None else ("", [h.name])
    buckets = con.execute(f"SELECT model, tag, label, le, sum(count) FROM metric_buckets WHERE name = ? {where}"
                          " GROUP BY ALL ORDER BY model, tag, label, le", params).fetchall()
    params[0] = h.name + "_sum"
    sums = {(m, t, lab): v for m, t, lab, v in con.execute(
        f"SELECT model, tag, label, sum(value) FROM metric_counters WHERE name = ? {where} GROUP BY ALL",
        params).fetchall()}
    series: defaultdict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for m, tag, label, le, n in buckets:
        series[(m, tag, label)].append((le, float(n)))
    out: defaultdict[str, list[str]] = defaultdict(list)
    for (m, tag, label), rows in series.items():
        labels = [*GENAI_LABELS, ("gen_ai_request_model", m)]
        labels += [("provider_tag", tag)] if tag else []
        labels += [("error_type", label)] if label else []
        out[m].append(histogram_lines(h.name, labels, rows, float(sums.get((m, tag, label)) or 0.0)))
    return {m: "".join(parts) for m, parts in out.items()}


def model_text(con: Any, model: str | None = None, *, skip_failing: bool = False) -> list[tuple[str, str, str]]:
    """(family, model, body) of every stored family, rendered from the rollup: of one model, or of all.
    `skip_failing`: leave out a family whose query fails (a snapshot a migration behind) instead of raising."""
    rows = []
    for f in STORED:
        try:
            bodies = (_family_bodies(con, f, model) if isinstance(f, Family) else _histogram_bodies(con, f, model))
        except Exception as exc:
            if not skip_failing:
                raise
            log.debug("metrics: %s skipped: %s", f.name, str(exc).splitlines()[0] if str(exc) else exc)
            continue
        rows += [(f.name, m, body) for m, body in sorted(bodies.items())]
    return rows


#: Migration 11: the table. It was filled here from the rollup a file at migration 10 already held; migration 14
#: renders every model's text again (with the labels it renamed), so the fill moved there.
METRIC_TEXT_SQL = """
CREATE TABLE metric_text (
    family  VARCHAR NOT NULL,
    model   VARCHAR NOT NULL,
    body    VARCHAR NOT NULL,
    PRIMARY KEY (family, model)
)
"""


def _store(con: Connection, rows: list[tuple[str, str, str]]) -> None:
    insert_rows(con, "metric_text", [{"family": f, "model": m, "body": b} for f, m, b in rows])


def render_model_text(con: Connection, model: str) -> None:
    """Render `model`'s stored families from the rollup into `metric_text` (inside the save transaction)."""
    con.execute("DELETE FROM metric_text WHERE model = ?", [model])
    _store(con, model_text(con, model))


def render_all_text(con: Connection) -> None:
    """Render every model's stored families (migration 14; a rollup built outside the save transaction)."""
    con.execute("DELETE FROM metric_text")
    _store(con, model_text(con))


def stored_text(con: Any) -> list[tuple[str, str, str]] | Any:
    """(family, model, body) rows of the stored exposition text (a cursor), or rendered from the rollup now
    when the snapshot's text is older than this code's (a file before migration 14); None before the rollup."""
    try:
        version = con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] or 0
        if version >= TEXT_VERSION:
            return con.execute("SELECT family, model, body FROM metric_text")
    except Exception as exc:
        log.debug("metrics: no stored text: %s", str(exc).splitlines()[0] if str(exc) else exc)
    return model_text(con, skip_failing=True) or None


def scrape_text(con: Any, families: Sequence[Family]) -> dict[str, str]:
    """Family name -> its sample lines, rendered now from the snapshot: one query for all (each query costs a
    few ms of planning); if it fails (a shard a migration behind lacks a table), family by family, leaving out
    the ones that fail."""
    def rows_of(chosen: Sequence[Family]) -> dict[str, list[Any]]:
        parts = []
        for i, f in enumerate(chosen):
            cols, source = _named(f)
            labels = ", ".join(f"CAST({c} AS VARCHAR)" for c in cols)
            parts.append(f"SELECT {i} AS i, [{labels}]::VARCHAR[] AS labels, v::DOUBLE AS v FROM {source}")
        out: dict[str, list[Any]] = {f.name: [] for f in chosen}
        for i, labels, v in con.execute(" UNION ALL ".join(parts) + " ORDER BY i, labels").fetchall():
            out[chosen[i].name].append((*labels, v))
        return out

    try:
        found = rows_of(families)
    except Exception:
        found = {}
        for f in families:
            try:
                found |= rows_of([f])
            except Exception as exc:
                log.debug("metrics: %s skipped: %s", f.name, str(exc).splitlines()[0] if str(exc) else exc)
    return {f.name: family_lines(f.name, f.labels, found[f.name]) for f in families if f.name in found}


@dataclass(frozen=True, slots=True)
class ExclusionRows:
    """What the exclusion gauges need from the snapshot (small: one row per model, suspension, exclusion)."""

    latest: list[tuple[str, list[str]]]  # model -> endpoints of its latest complete full round
    states: dict[str, list[EndpointState]]  # enforce-mode states with a suspension, per model
    operational: list[OperationalExclusion]  # not removed (expiry is checked at each scrape)


def exclusion_rows(con: Any) -> ExclusionRows | None:
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
