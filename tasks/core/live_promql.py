"""Live evidence through Prometheus (pure): the routers' per-endpoint counters, summed over every replica, read
back as the same `LiveCount` records the `live_requests` table gives (docs/design.md "Suspicion").

Every router replica exports (provider_canary/router/live_metrics.py), per canary model, endpoint tag and provider:

    canary_router_live_attempts_total{model, tag, provider, outcome}           what live_requests counts
    canary_router_live_judged_total{model, tag, provider, quality, outcome}    judged answers: ok | quality_fail
    canary_router_live_quality_failures_total{model, tag, provider, quality, reason}   why they failed

`tag` is the tier's pinned endpoint (empty when the tier pins none), `provider` the provider the answer named
(empty when the tag is known: the tag says it all, and the series exists from the router's start). The watcher
asks Prometheus's HTTP API one instant query per family at the look's time:

    sum by (model, tag, provider, outcome) (increase(canary_router_live_attempts_total[300s])) > 0

`sum by` the labels the records need sums every other label away: `instance`, `job` and whatever the scrape
config adds (`pod`, `replica`), so N replicas are one fleet. `increase` copes with a replica's restart (a counter
reset). The window is one sum, stamped at its start: the rules' "never from before the endpoint's previous
suspicion" can then only drop the whole window, which with `suspect_cooldown_s >= suspect_window_s` (the
defaults) never happens, as on the database path.

    queries = live_queries(window_s)                          # name -> PromQL
    samples = parse_vector(body)                              # one /api/v1/query answer; PromError if not
    counts = live_counts(model, found, window_start)          # found: name -> samples; the records
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality

ATTEMPTS = "canary_router_live_attempts_total"
JUDGED = "canary_router_live_judged_total"
QUALITY_FAILURES = "canary_router_live_quality_failures_total"
#: Each family's labels the watcher reads (the label names the router's counters carry).
LABELS: Mapping[str, tuple[str, ...]] = {
    ATTEMPTS: ("model", "tag", "provider", "outcome"),
    JUDGED: ("model", "tag", "provider", "quality", "outcome"),
    QUALITY_FAILURES: ("model", "tag", "provider", "quality", "reason"),
}
#: How many router replicas Prometheus holds live counters of (a replica exports them from its start).
ROUTERS = f"count(count by (job, instance) ({ATTEMPTS}))"
#: `route_key` and `tier` of a record summed over every route and tier of the fleet (the rules do not read them).
ANY_ROUTE, ANY_TIER = "*", 0


class PromError(ValueError):
    """An answer of Prometheus's HTTP API that is not the instant vector asked for (one line: what it was)."""


@dataclass(frozen=True, slots=True)
class Sample:
    labels: Mapping[str, str]
    value: float


def promql_string(value: str) -> str:
    """A PromQL string literal (Go's syntax: `\\"`, `\\\\`, `\\n` and `\\uXXXX` escapes read as JSON writes them)."""
    return json.dumps(value, ensure_ascii=False)


def live_query(family: str, window_s: float, models: Sequence[str] = ()) -> str:
    """The family's increase over `window_s` seconds, summed over every replica, non-zero groups only;
    `models`: only their series (none: every model's)."""
    match = ""
    if models:
        alternatives = "|".join(_regex_literal(m) for m in sorted(set(models)))
        match = f"{{model=~{promql_string(alternatives)}}}"
    labels = ", ".join(LABELS[family])
    return f"sum by ({labels}) (increase({family}{match}[{max(1, round(window_s))}s])) > 0"


def live_queries(window_s: float, models: Sequence[str] = ()) -> dict[str, str]:
    return {family: live_query(family, window_s, models) for family in LABELS}


def _regex_literal(text: str) -> str:
    """`text` matched literally by an RE2 regular expression (Prometheus's `=~`)."""
    return "".join(f"\\{c}" if c in r"\.+*?()|[]{}^$" else c for c in text)


def parse_vector(body: bytes | str | Mapping[str, Any]) -> list[Sample]:
    """The samples of an instant-vector answer (`"resultType": "vector"`); a scalar answer (`count(...)` of
    nothing is an empty vector, not a scalar) is refused like an error answer: PromError, one line."""
    doc = _document(body)
    if doc.get("status") != "success":
        kind, error = doc.get("errorType", "error"), doc.get("error", "no error text")
        raise PromError(f"{kind}: {_line(error)}")
    data = doc.get("data")
    if not isinstance(data, Mapping) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        kind = data.get("resultType") if isinstance(data, Mapping) else type(data).__name__
        raise PromError(f"a {kind} where an instant vector was asked for")
    out = []
    for item in data["result"]:
        try:
            metric, (_, raw) = item["metric"], item["value"]
            value = float(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise PromError(f"a sample this code cannot read ({type(exc).__name__})") from None
        if isinstance(metric, Mapping):
            out.append(Sample({str(k): str(v) for k, v in metric.items()}, value))
    return out


def _document(body: bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        return body
    try:
        doc = json.loads(body)
    except ValueError:
        raise PromError("something that is not JSON") from None
    if not isinstance(doc, Mapping):
        raise PromError("JSON that is not an object")
    return doc


def _line(text: object) -> str:
    return " ".join(str(text).split())[:300]


def count_of(value: float) -> int:
    """An `increase` (extrapolated over the window, so 19.6 for 20 requests) as requests; NaN and Inf are none."""
    return max(0, round(value)) if math.isfinite(value) else 0


def routers_of(samples: Sequence[Sample]) -> int:
    """The replicas the `ROUTERS` query counted (an empty answer: none)."""
    return sum(count_of(s.value) for s in samples)


def live_counts(model: str, found: Mapping[str, Sequence[Sample]], window_start: datetime) -> list[LiveCount]:
    """`model`'s records, as `tasks/store/live.py live_counts` builds them from the table: attempt rows, then
    judged rows (`ok` with reason `ok`; the failures split by reason, any the reason counter misses as reason
    None). Samples of other models, outcomes and classes this code does not know, and zero counts are left out."""
    out: list[LiveCount] = []
    for s in found.get(ATTEMPTS, ()):
        n, outcome = count_of(s.value), _enum(LiveOutcome, s.labels.get("outcome"))
        if s.labels.get("model") == model and n and outcome is not None and outcome is not LiveOutcome.QUALITY_FAIL:
            out.append(_record(model, s, window_start, outcome, n))
    reasons: dict[tuple[str, str, LiveQuality], list[tuple[str, int]]] = {}
    for s in found.get(QUALITY_FAILURES, ()):
        quality, n = _enum(LiveQuality, s.labels.get("quality")), count_of(s.value)
        if s.labels.get("model") == model and quality is not None and n and s.labels.get("reason"):
            reasons.setdefault(_endpoint(s, quality), []).append((s.labels["reason"], n))
    for s in found.get(JUDGED, ()):
        quality, n = _enum(LiveQuality, s.labels.get("quality")), count_of(s.value)
        outcome = _enum(LiveOutcome, s.labels.get("outcome"))
        if s.labels.get("model") != model or quality is None or not n:
            continue
        if outcome is LiveOutcome.OK:
            out.append(_record(model, s, window_start, outcome, n, quality, "ok"))
        elif outcome is LiveOutcome.QUALITY_FAIL:
            out += [_record(model, s, window_start, outcome, k, quality, reason)
                    for reason, k in split_failures(n, reasons.get(_endpoint(s, quality), []))]
    return out


def split_failures(failures: int, reasons: Sequence[tuple[str, int]]) -> list[tuple[str | None, int]]:
    """`failures` judged answers of one endpoint and class, told apart by the reason counter's `reasons`: the
    most frequent reasons first, never more than `failures` in all (the counters are scraped apart, so they may
    disagree by a request), the rest under reason None."""
    out: list[tuple[str | None, int]] = []
    left = failures
    for reason, n in sorted(reasons, key=lambda r: (-r[1], r[0])):
        take = min(n, left)
        if take:
            out.append((reason, take))
            left -= take
    if left:
        out.append((None, left))
    return out


def _enum(kind: Any, value: str | None) -> Any:
    try:
        return kind(value)
    except ValueError:
        return None


def _endpoint(s: Sample, quality: LiveQuality) -> tuple[str, str, LiveQuality]:
    return s.labels.get("tag", ""), s.labels.get("provider", ""), quality


def _record(model: str, s: Sample, at: datetime, outcome: LiveOutcome, n: int, quality: LiveQuality | None = None,
            reason: str | None = None) -> LiveCount:
    return LiveCount(at, model, ANY_ROUTE, ANY_TIER, s.labels.get("tag") or None, s.labels.get("provider") or None,
                     outcome, n, quality, reason)
