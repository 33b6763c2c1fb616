"""What one round adds to the metrics rollup (pure): counters, histogram buckets and the last-round probes.

The Prometheus exporter (`canary metrics`, tasks/metrics/exporter.py) must not scan the history at each scrape, so
the round's save transaction folds the round into a few small tables (tasks/store/metric_rollup.py) whose
size depends on the fleet, not on how long the canary has run:

    rollup = round_rollup(settlement.info, settlement.attempts, settlement.results, settlement.endpoints)

Labels are bounded: models and endpoint tags come from the catalog, contracts and outcomes are enums, and a
reason is a `Reason` member or one of a few families (`bounded_reason`); no free text reaches a label.
Histograms are named after OpenTelemetry's GenAI client metrics and use the convention's bucket boundaries.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from tasks.core.cost import attempt_cost
from tasks.core.reasons import Reason
from tasks.core.round_records import Attempt, ContractResult, Endpoint, RoundInfo
from tasks.core.vocabulary import Outcome

#: OpenTelemetry GenAI client histograms (gen_ai.client.operation.duration and .time_to_first_chunk share
#: them): ExplicitBucketBoundaries in seconds, 10 ms doubling to 81.92 s; +Inf is implied.
GENAI_BUCKETS_S: tuple[float, ...] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)
INF = float("inf")

DURATION = "gen_ai_client_operation_duration_seconds"  # per model (tag "") and error type: per endpoint is FIRST_CHUNK
FIRST_CHUNK = "gen_ai_client_operation_time_to_first_chunk_seconds"
OUTCOMES = "canary_probe_outcomes_total"  # label: outcome
FAILURES = "canary_probe_failures_total"  # label: reason (fail and transport outcomes)
REQUESTS = "canary_probe_requests_total"  # label: error_type (`none` when the exchange completed)
SPEND = "canary_spend_usd_total"  # label: basis (reported | estimated | unpriced)

_REASONS = frozenset(r.value for r in Reason)


def bounded_reason(reason: str) -> str:
    """A reason fit for a label: a `Reason` value as is, the formed families by class (`http_429` ->
    `http_4xx`, `midstream_502` -> `midstream_5xx`, `control_*` -> `control_other`), anything else `other`."""
    if reason in _REASONS:
        return reason
    for family in ("http_", "midstream_"):
        if reason.startswith(family):
            code = reason[len(family):]
            return f"{family}{code[0]}xx" if code[:1].isdigit() else f"{family}other"
    if reason.startswith("control_"):
        return "control_other"
    return "other"


@dataclass(frozen=True, slots=True)
class CounterDelta:
    name: str
    model: str
    tag: str
    contract: str  # "" when the counter is not per contract
    label: str  # the metric's own label value (outcome, reason, error type, cost basis)
    value: float


@dataclass(frozen=True, slots=True)
class BucketDelta:
    """Observations <= `le` (cumulative, as Prometheus exposes them); `le` = inf counts every observation.
    `label` is the operation's error type (GenAI `error.type`: the attempt's error class), '' when it succeeded."""

    name: str
    model: str
    tag: str
    le: float
    count: int
    label: str = ""


@dataclass(frozen=True, slots=True)
class LastProbe:
    """One contract of one endpoint as the round saw it (the last-round gauges)."""

    model: str
    tag: str
    contract: str
    outcome: str
    reason: str
    ttft_s: float | None
    duration_s: float | None
    round_id: str
    round_ts: datetime


@dataclass(frozen=True, slots=True)
class RoundRollup:
    round_id: str
    model: str
    round_ts: datetime
    partial: bool
    counters: tuple[CounterDelta, ...]
    buckets: tuple[BucketDelta, ...]
    last: tuple[LastProbe, ...]


def cumulative_buckets(values: Iterable[float]) -> list[tuple[float, int, float]]:
    """(le, observations <= le, sum) per boundary and +Inf, for one series' observations."""
    obs = sorted(values)
    total = sum(obs)
    out: list[tuple[float, int, float]] = []
    i = 0
    for le in (*GENAI_BUCKETS_S, INF):
        while i < len(obs) and obs[i] <= le:
            i += 1
        out.append((le, i, total))
    return out


def _histogram(name: str, series: dict[tuple[str, str, str], list[float]]
               ) -> tuple[list[BucketDelta], list[CounterDelta]]:
    """Per (model, tag, error type) series: its cumulative buckets and its `_sum`."""
    buckets: list[BucketDelta] = []
    sums: list[CounterDelta] = []
    for (model, tag, error), values in sorted(series.items()):
        rows = cumulative_buckets(values)
        buckets += [BucketDelta(name, model, tag, le, n, error) for le, n, _ in rows]  # every boundary, 0 too
        sums.append(CounterDelta(name + "_sum", model, tag, "", error, rows[-1][2]))
    return buckets, sums


def _first_attempts(attempts: Sequence[Attempt]) -> dict[tuple[str, str], Attempt]:
    first: dict[tuple[str, str], Attempt] = {}
    for a in attempts:
        key = (a.tag, str(a.contract))
        if key not in first or a.attempt_no < first[key].attempt_no:
            first[key] = a
    return first


def round_rollup(info: RoundInfo, attempts: Sequence[Attempt], results: Sequence[ContractResult],
                 endpoints: Sequence[Endpoint]) -> RoundRollup:
    """Everything the round adds to the rollup (module doc)."""
    counts: Counter[tuple[str, str, str, str, str]] = Counter()
    spend: defaultdict[tuple[str, str, str], float] = defaultdict(float)
    durations: defaultdict[tuple[str, str, str], list[float]] = defaultdict(list)
    first_chunks: defaultdict[tuple[str, str, str], list[float]] = defaultdict(list)
    pricing = {e.tag: e for e in endpoints}
    for r in results:
        counts[(OUTCOMES, r.model, r.tag, str(r.contract), str(r.outcome))] += 1
        if r.outcome in (Outcome.FAIL, Outcome.TRANSPORT):
            counts[(FAILURES, r.model, r.tag, str(r.contract), bounded_reason(r.reason))] += 1
    for a in attempts:
        error = str(a.error_class) if a.error_class is not None else "none"
        counts[(REQUESTS, a.model, a.tag, str(a.contract), error)] += 1
        cost = attempt_cost(a, pricing.get(a.tag))
        spend[(a.model, a.tag, str(cost.basis))] += cost.usd
        if a.total_ms is not None:  # per model (17 series, not 17 per endpoint), by GenAI error.type
            durations[(a.model, "", "" if error == "none" else error)].append(a.total_ms / 1000)
        if a.ttft_ms is not None:
            first_chunks[(a.model, a.tag, "")].append(a.ttft_ms / 1000)
    counters = [CounterDelta(n, m, t, c, label, float(v)) for (n, m, t, c, label), v in sorted(counts.items())]
    counters += [CounterDelta(SPEND, m, t, "", basis, usd) for (m, t, basis), usd in sorted(spend.items())]
    buckets: list[BucketDelta] = []
    for name, series in ((DURATION, durations), (FIRST_CHUNK, first_chunks)):
        b, sums = _histogram(name, series)
        buckets += b
        counters += sums
    first = _first_attempts(attempts)
    last = []
    for r in results:
        probe = first.get((r.tag, str(r.contract)))  # opening has no attempt of its own
        ttft = probe.ttft_ms if probe is not None else None
        total = probe.total_ms if probe is not None else None
        last.append(LastProbe(
            r.model, r.tag, str(r.contract), str(r.outcome), bounded_reason(r.reason),
            ttft / 1000 if ttft is not None else None, total / 1000 if total is not None else None,
            info.round_id, info.round_ts,
        ))
    return RoundRollup(info.round_id, info.model, info.round_ts, info.partial, tuple(counters),
                       tuple(buckets), tuple(last))
