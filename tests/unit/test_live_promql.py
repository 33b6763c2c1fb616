"""Live evidence through Prometheus (tasks/core/live_promql.py): the PromQL the watcher sends, and the answers it
reads, from real bytes (tests/fixtures/prometheus/: a real Prometheus scraping two real routers, captured by
capture.py there) into the records the database path builds, so `suspect` decides the same on both."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tasks.core.live_promql import (
    ATTEMPTS,
    JUDGED,
    QUALITY_FAILURES,
    ROUTERS,
    PromError,
    Sample,
    live_counts,
    live_queries,
    live_query,
    parse_vector,
    promql_string,
    routers_of,
    split_failures,
)
from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.core.live_tally import quality_tally, tally
from tasks.core.suspicion import SuspicionRules, suspect
from tasks.core.types import Endpoint, IgnoreList

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus"
MODEL = "acme/live-fleet-3.3"  # tests/support/live_fleet.py's
START = datetime(2026, 12, 6, 2, 8, tzinfo=UTC)


def fixture(name: str) -> bytes:
    return (FIXTURES / f"{name}.json").read_bytes()


def captured() -> dict[str, list[Sample]]:
    return {ATTEMPTS: parse_vector(fixture("live-attempts")), JUDGED: parse_vector(fixture("live-judged")),
            QUALITY_FAILURES: parse_vector(fixture("live-quality_failures"))}


def test_each_family_is_summed_by_the_records_labels_over_the_window_and_only_non_zero_groups() -> None:
    assert live_query(ATTEMPTS, 300) == ("sum by (model, tag, provider, outcome) "
                                         "(increase(canary_router_live_attempts_total[300s])) > 0")
    assert live_query(JUDGED, 60.4, ["b/y", "a/x"]) == (
        'sum by (model, tag, provider, quality, outcome) (increase(canary_router_live_judged_total'
        '{model=~"a/x|b/y"}[60s])) > 0')
    assert set(live_queries(300)) == {ATTEMPTS, JUDGED, QUALITY_FAILURES}
    assert "reason" in live_queries(300)[QUALITY_FAILURES].split(")")[0]


def test_a_model_id_is_matched_literally_inside_a_promql_string() -> None:
    query = live_query(ATTEMPTS, 60, ['meta/llama-3.3 "x" \\ (a|b)+'])
    matcher = query.split("{model=~", 1)[1].split("}[", 1)[0]
    assert json.loads(matcher) == 'meta/llama-3\\.3 "x" \\\\ \\(a\\|b\\)\\+'  # RE2 sees the dot and the rest literally
    assert promql_string('say "hi"\n') == '"say \\"hi\\"\\n"'
    # the capture's own filter (a dot in the id) matched the real Prometheus: its answers hold the model
    index = json.loads(fixture("index"))
    assert index["answers"][0]["query"] == live_queries(60, [MODEL])[ATTEMPTS]
    assert {s.labels["model"] for s in captured()[ATTEMPTS]} == {MODEL}


def test_real_answers_become_the_records_the_table_would_hold() -> None:
    counts = live_counts(MODEL, captured(), START)
    attempts = {(c.tag, c.provider_name, str(c.outcome)): c.requests for c in counts if c.quality is None}
    # Prometheus drops empty labels: a pinned tier's series has no provider, an unpinned one no tag
    assert attempts == {(None, "Delta", "ok"): 7, ("beta", None, "ok"): 17, ("gamma", None, "ok"): 9,
                        ("alpha", None, "upstream_error"): 9}
    judged = {(c.tag, c.provider_name, str(c.quality), str(c.outcome), c.reason): c.requests
              for c in counts if c.quality is not None}
    assert judged[("gamma", None, "tools", "quality_fail", "schema_violation")] == 7
    assert judged[("gamma", None, "tools", "quality_fail", None)] == 2  # the reason counter's series began late
    assert judged[("beta", None, "tools", "ok", "ok")] == 9
    assert judged[(None, "Delta", "empty", "ok", "ok")] == 7
    assert all(c.minute_at == START and c.model == MODEL for c in counts)
    assert live_counts("acme/other", captured(), START) == []


@pytest.mark.parametrize(("name", "words"), [
    ("error-bad-data", "bad_data: invalid parameter \"query\""),
    ("matrix", "a matrix where an instant vector was asked for"),
])
def test_an_answer_that_is_not_an_instant_vector_is_one_line(name: str, words: str) -> None:
    with pytest.raises(PromError) as caught:
        parse_vector(fixture(name))
    assert words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("body", [
    b"<html>502 Bad Gateway</html>", b"[1, 2]", b'{"status": "success"}',
    b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}}'])
def test_anything_else_is_refused_too(body: bytes) -> None:
    with pytest.raises(PromError):
        parse_vector(body)


def test_the_routers_count_and_an_empty_answer() -> None:
    assert ROUTERS == "count(count by (job, instance) (canary_router_live_attempts_total))"
    assert routers_of(parse_vector(fixture("routers"))) == 2
    assert parse_vector(fixture("other-model")) == [] and routers_of([]) == 0


def test_counts_that_are_no_requests_are_left_out() -> None:
    def attempt(outcome: str, value: float) -> Sample:
        return Sample({"model": MODEL, "tag": "a", "outcome": outcome}, value)

    found = {ATTEMPTS: [attempt("ok", float("nan")), attempt("ok", float("inf")), attempt("ok", 0.4),
                        attempt("a_newer_outcome", 20), attempt("quality_fail", 20), attempt("http_5xx", 19.6)]}
    assert [(c.outcome, c.requests) for c in live_counts(MODEL, found, START)] == [(LiveOutcome.HTTP_5XX, 20)]


@pytest.mark.parametrize(("failures", "reasons", "expected"), [
    (5, [("a", 3), ("b", 2)], [("a", 3), ("b", 2)]),
    (5, [("a", 2)], [("a", 2), (None, 3)]),
    (4, [("b", 3), ("a", 3)], [("a", 3), ("b", 1)]),  # more reasons than failures: never more in all
    (3, [], [(None, 3)]),
    (0, [("a", 1)], []),
])
def test_failures_are_told_apart_by_reason_never_more_than_counted(failures: int, reasons: list[tuple[str, int]],
                                                                   expected: list[tuple[str | None, int]]) -> None:
    assert split_failures(failures, reasons) == expected


# -- the same decisions on both paths -----------------------------------------------------------------------

NOW = datetime(2026, 12, 1, 12, 0, 30, tzinfo=UTC)
RULES = SuspicionRules(window_s=300, min_requests=20, failure_rate=0.5, uptime_drop=20, cooldown_s=900)
EPS = [Endpoint(MODEL, "alpha", "Alpha"), Endpoint(MODEL, "beta", "Beta"), Endpoint(MODEL, "d1", "Delta"),
       Endpoint(MODEL, "d2", "Delta")]
#: (tag, provider, outcome, quality, reason) -> requests per minute for the last five minutes, as two routers wrote
#: them into `live_requests` (their route keys and tiers differ)
TRAFFIC = {("alpha", "Alpha", LiveOutcome.UPSTREAM_ERROR, None, "network_error"): 3,
           ("alpha", "Alpha", LiveOutcome.OK, None, None): 2, ("beta", "Beta", LiveOutcome.OK, None, None): 6,
           (None, "Delta", LiveOutcome.HTTP_5XX, None, None): 4, (None, "Delta", LiveOutcome.HTTP_429, None, None): 9,
           ("beta", "Beta", LiveOutcome.QUALITY_FAIL, LiveQuality.TOOLS, "schema_violation"): 5,
           ("beta", "Beta", LiveOutcome.OK, LiveQuality.TOOLS, "ok"): 1,
           ("alpha", "Alpha", LiveOutcome.OK, LiveQuality.TOOLS, "ok"): 6}


def _table_rows() -> list[LiveCount]:
    minute = NOW.replace(second=0)
    return [LiveCount(minute - timedelta(minutes=m), MODEL, f"model:r{router}", router, tag, provider, outcome, n,
                      quality, reason)
            for m in range(5) for router in (1, 2) for (tag, provider, outcome, quality, reason), n in TRAFFIC.items()]


def _prometheus_samples() -> dict[str, list[Sample]]:
    """What the three queries answer for the same traffic (2 routers x 5 minutes), empty labels dropped."""
    def labels(tag: str | None, provider: str | None, **more: str) -> dict[str, str]:
        return {"model": MODEL, **({"tag": tag} if tag else {"provider": provider or ""}), **more}

    out: dict[str, list[Sample]] = {ATTEMPTS: [], JUDGED: [], QUALITY_FAILURES: []}
    for (tag, provider, outcome, quality, reason), n in TRAFFIC.items():
        total = 10 * n * 1.004  # increase extrapolates a little
        if quality is None:
            out[ATTEMPTS].append(Sample(labels(tag, provider, outcome=outcome), total))
            continue
        out[JUDGED].append(Sample(labels(tag, provider, quality=quality, outcome=outcome), total))
        if outcome is LiveOutcome.QUALITY_FAIL and reason:
            out[QUALITY_FAILURES].append(Sample(labels(tag, provider, quality=quality, reason=reason), total))
    return out


def test_suspect_decides_the_same_on_the_records_of_either_path() -> None:
    window_start = NOW - timedelta(seconds=RULES.window_s)
    table = [c for c in _table_rows() if c.minute_at >= window_start.replace(second=0)]
    prom = live_counts(MODEL, _prometheus_samples(), window_start)
    since = {e.tag: window_start for e in EPS}
    until = NOW + timedelta(minutes=1)
    assert tally(prom, EPS, since=since, until=until) == tally(table, EPS, since=since, until=until)
    assert quality_tally(prom, EPS, since=since, window_start=window_start, until=until) == \
        quality_tally(table, EPS, since=since, window_start=window_start, until=until)
    ignore = IgnoreList(MODEL, (), ())
    found = [suspect(MODEL, counts, EPS, {}, ignore, {}, RULES, NOW) for counts in (table, prom)]
    assert found[0] == found[1]
    assert [(s.tag, str(s.signal)) for s in found[1]] == [
        ("alpha", "live_failure_rate"), ("beta", "live_quality"), ("d1", "live_failure_rate"),
        ("d2", "live_failure_rate")]


def test_the_window_is_one_sum_so_evidence_from_before_a_suspicion_inside_it_is_spent() -> None:
    """An endpoint suspected 2 minutes ago (no cooldown) is not suspected again on the same window's sum: the
    records are stamped at the window's start, before its previous suspicion."""
    window_start = NOW - timedelta(seconds=RULES.window_s)
    prom = live_counts(MODEL, _prometheus_samples(), window_start)
    rules = SuspicionRules(window_s=300, min_requests=20, failure_rate=0.5, uptime_drop=20, cooldown_s=0)
    again = suspect(MODEL, prom, EPS, {}, IgnoreList(MODEL, (), ()), {"alpha": NOW - timedelta(minutes=2)}, rules, NOW)
    assert "alpha" not in {s.tag for s in again} and {"d1", "d2"} <= {s.tag for s in again}
