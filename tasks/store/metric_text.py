"""The exposition text of the large metric families, rendered per model inside the round's save transaction.

    render_model_text(con, "openai/gpt-4o")      # after roll_up_round, in the same transaction
    stored_text_sql()                            # what a scrape reads: (family, model, body) rows

The families read from the metrics rollup (tasks/store/metric_rollup.py) are per model, endpoint and contract:
~75k samples (~9 MB of text) at 100 models x 15 endpoints. Rendering them at each new snapshot cost a scrape
~200 ms and ~140 MB (benchmarks/bench_metrics.py), more than the scan of `attempts` they replace. A round
changes one model's rollup rows only, so the save transaction renders that model's sample lines (DuckDB formats
them) into `metric_text` (migration 11): one row per (family, model), its `body` the sample lines, no HELP/TYPE
header. A scrape then only concatenates stored text under each family's header (tasks/metrics.py).

A family is one `Family(...)` line in `FAMILIES`: its name, type, help, labels and a query whose columns are
the label values then the value. `per_model` families (the rollup's: model is their first column) are stored;
the others (policy state, rounds, outbox: small) are rendered at each scrape by `family_lines_sql`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tasks.core.metric_rollup import DURATION, FAILURES, FIRST_CHUNK, OUTCOMES, REQUESTS, SPEND
from tasks.core.types import EndpointState, Mode, OperationalExclusion
from tasks.store.rows import Connection

log = logging.getLogger("canary.metrics")

EP = ("model", "endpoint")
EPC = ("model", "endpoint", "contract")


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

#: The GenAI client histograms (OpenTelemetry names, Prometheus spelling), from `metric_buckets`; per model.
HISTOGRAMS: tuple[Family, ...] = tuple(
    Family(name, "histogram", help_, ("gen_ai_request_model", "endpoint", "le"), "", per_model=True)
    for name, help_ in (
        (DURATION, "GenAI operation duration: probe requests of the model, from sending to the last byte"),
        (FIRST_CHUNK, "Time to receive the first text chunk of a streamed probe, from sending the request"),
    ))
GENAI_LABELS = {"gen_ai_operation_name": "chat", "gen_ai_provider_name": "openrouter"}

_SQL_ESCAPE = "replace(replace(replace(CAST({} AS VARCHAR), '\\', '\\\\'), '\"', '\\\"'), chr(10), '\\n')"


def family_lines_sql(f: Family) -> str:
    """SELECT (family, model, one exposition line) per row of `f.sql`, formatted by DuckDB (model: the first
    column, '' for a family without labels)."""
    cols = [f"c{i}" for i in range(len(f.labels))]
    labels = " || ',' || ".join(f"'{label}=\"' || {_SQL_ESCAPE.format(c)} || '\"'" for label, c in
                                zip(f.labels, cols, strict=True))
    braces = f"'{{' || {labels} || '}}' || " if labels else ""
    model = "CAST(c0 AS VARCHAR)" if cols else "''"
    return (f"SELECT '{f.name}' AS family, {model} AS model, '{f.name}' || {braces}' ' || CAST(v::DOUBLE AS VARCHAR)"
            f" AS line, 0 AS kind, 0 AS le FROM ({f.sql}) q({', '.join([*cols, 'v'])}) WHERE v IS NOT NULL")


def histogram_lines_sql(h: Family) -> str:
    """SELECT (family, model, line, kind, le): a GenAI histogram from `metric_buckets` (cumulative counts at every
    boundary), its `_sum` from `metric_counters` and its `_count`, ordered by (tag, kind, le) within a model."""
    name = h.name
    fixed = ",".join(f'{k}="{v}"' for k, v in GENAI_LABELS.items())
    labels = (f"'{fixed},gen_ai_request_model=\"' || {_SQL_ESCAPE.format('model')} || '\"' || CASE WHEN tag = ''"
              f" THEN '' ELSE ',endpoint=\"' || {_SQL_ESCAPE.format('tag')} || '\"' END")
    return f"""
        WITH b AS (SELECT model, tag, le, sum(count) AS n FROM metric_buckets WHERE name = '{name}' GROUP BY ALL),
             sums AS (SELECT model, tag, sum(value) AS v FROM metric_counters WHERE name = '{name}_sum'
                      GROUP BY ALL),
             lines AS (
                SELECT model, tag, 0 AS kind, le, 'bucket' AS suffix,
                       ',le="' || CASE WHEN le = 'inf'::DOUBLE THEN '+Inf' ELSE CAST(le AS VARCHAR) END
                       || '"' AS le_label, n::DOUBLE AS v FROM b
                UNION ALL SELECT model, tag, 1, 0, 'sum', '', coalesce(u.v, 0)::DOUBLE
                          FROM b LEFT JOIN sums u USING (model, tag) WHERE b.le = 'inf'::DOUBLE
                UNION ALL SELECT model, tag, 2, 0, 'count', '', n::DOUBLE FROM b WHERE le = 'inf'::DOUBLE)
        SELECT '{name}' AS family, model,
               '{name}_' || suffix || '{{' || {labels} || le_label || '}} ' || CAST(v AS VARCHAR) AS line,
               kind, le, tag FROM lines"""


def stored_text_sql(model_filter: bool) -> str:
    """SELECT (family, model, body): every per-model family's sample lines of each model (of one model, `?`,
    with `model_filter`), as `metric_text` stores them."""
    where = "WHERE model = ?" if model_filter else ""
    parts = [f"SELECT family, model, line, kind, le, '' AS tag FROM ({family_lines_sql(f)}) {where}"
             for f in FAMILIES if f.per_model]
    parts += [f"SELECT family, model, line, kind, le, tag FROM ({histogram_lines_sql(h)}) {where}"
              for h in HISTOGRAMS]
    union = "\nUNION ALL\n".join(parts)
    return (f"SELECT family, model, string_agg(line, chr(10) ORDER BY tag, kind, le, line) || chr(10) AS body "
            f"FROM ({union}) GROUP BY family, model")


#: Migration 11: the table, filled from the rollup a file at migration 10 already holds (each model's next
#: round renders it again, so a later change of the rendering reaches every model within a cycle).
METRIC_TEXT_SQL = f"""
CREATE TABLE metric_text (
    family  VARCHAR NOT NULL,
    model   VARCHAR NOT NULL,
    body    VARCHAR NOT NULL,
    PRIMARY KEY (family, model)
);
INSERT INTO metric_text {stored_text_sql(model_filter=False)}
"""


def render_model_text(con: Connection, model: str) -> None:
    """Render `model`'s stored families from the rollup into `metric_text` (inside the save transaction)."""
    con.execute("DELETE FROM metric_text WHERE model = ?", [model])
    con.execute(f"INSERT INTO metric_text {stored_text_sql(model_filter=True)}", [model] * _stored_count())


def render_all_text(con: Connection) -> None:
    """Render every model's stored families (a rollup built outside the save transaction: benchmarks)."""
    con.execute("DELETE FROM metric_text")
    con.execute(f"INSERT INTO metric_text {stored_text_sql(model_filter=False)}")


def _stored_count() -> int:
    return sum(1 for f in (*FAMILIES, *HISTOGRAMS) if f.per_model)


def header(f: Family) -> str:
    text = f.help.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {f.name} {text}\n# TYPE {f.name} {f.kind}\n"


def scrape_lines_sql(families: Sequence[Family]) -> str:
    """SELECT (family, body) of the families rendered at each scrape, one row per family."""
    union = "\nUNION ALL\n".join(family_lines_sql(f) for f in families)
    return f"SELECT family, string_agg(line, chr(10)) || chr(10) FROM ({union}) GROUP BY family"


def stored_text(con: Any) -> Any:
    """A cursor over (family, model, body) of the stored exposition text; before migration 11 the same rows
    rendered from the rollup now (slow, once a cycle); before migration 10 None."""
    try:
        return con.execute("SELECT family, model, body FROM metric_text")
    except Exception as exc:
        log.debug("metrics: no stored text: %s", str(exc).splitlines()[0] if str(exc) else exc)
    try:
        return con.execute(stored_text_sql(model_filter=False))
    except Exception as exc:
        log.debug("metrics: no rollup: %s", str(exc).splitlines()[0] if str(exc) else exc)
    return None


def scrape_lines(con: Any, families: Sequence[Family]) -> dict[str, str]:
    """Family name -> its exposition lines, rendered now from the snapshot (one query for all)."""
    return {str(name): str(text) for name, text in con.execute(scrape_lines_sql(families)).fetchall()}


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
