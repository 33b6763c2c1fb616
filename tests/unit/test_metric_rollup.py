"""The metrics rollup a round adds (tasks/core/metric_rollup.py): bounded labels, GenAI buckets, last-round rows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tasks.core.metric_rollup import (
    DURATION,
    FAILURES,
    FIRST_CHUNK,
    GENAI_BUCKETS_S,
    INF,
    OUTCOMES,
    REQUESTS,
    SPEND,
    RoundRollup,
    bounded_reason,
    cumulative_buckets,
    round_rollup,
)
from tasks.core.types import (
    Attempt,
    Contract,
    ContractResult,
    Endpoint,
    ErrorClass,
    Mode,
    Outcome,
    Reason,
    RoundInfo,
    Usage,
)

pytestmark = pytest.mark.unit
TS = datetime(2026, 5, 4, 6, 0, tzinfo=UTC)
INFO = RoundInfo("m@r1", "m", TS, Mode.ENFORCE)


@pytest.mark.parametrize(("reason", "label"), [
    ("ttft_exceeded", "ttft_exceeded"),
    ("ok", "ok"),
    ("http_429", "http_4xx"),
    ("http_503", "http_5xx"),
    ("http_None", "http_other"),
    ("midstream_502", "midstream_5xx"),
    ("control_refusal_pattern", "control_other"),
    ("the reply said: something free-form", "other"),
], ids=lambda v: str(v))
def test_reasons_become_bounded_labels(reason: str, label: str) -> None:
    assert bounded_reason(reason) == label


def test_every_reason_member_is_its_own_label() -> None:
    assert {bounded_reason(r.value) for r in Reason} == {r.value for r in Reason}


def test_buckets_are_the_genai_convention_and_cumulative() -> None:
    assert GENAI_BUCKETS_S[0] == 0.01 and GENAI_BUCKETS_S[-1] == 81.92 and len(GENAI_BUCKETS_S) == 14
    rows = cumulative_buckets([0.015, 0.3, 100.0])
    by_le = {le: n for le, n, _ in rows}
    assert by_le[0.01] == 0 and by_le[0.02] == 1 and by_le[0.32] == 2 and by_le[81.92] == 2 and by_le[INF] == 3
    assert rows[-1][2] == pytest.approx(100.315)


def _attempt(tag: str, contract: Contract, no: int = 1, **kw: object) -> Attempt:
    return Attempt(round_id=INFO.round_id, model="m", tag=tag, provider_name=tag.title(), contract=contract,
                   attempt_no=no, started_at=TS, **kw)  # type: ignore[arg-type]


def test_a_round_rollup_counts_outcomes_failures_requests_spend_and_histograms() -> None:
    r = _rollup()
    _counters_say(r)
    _buckets_say(r)
    _last_probes_say(r)


def _rollup() -> RoundRollup:
    """A round of two endpoints: a's ttft passes, its language fails (two attempts), its opening is inconclusive;
    b's ttft is a 429."""
    attempts = [
        _attempt("a", Contract.TTFT, ttft_ms=150.0, total_ms=900.0, usage=Usage(cost=0.002)),
        _attempt("a", Contract.LANGUAGE, ttft_ms=90.0, total_ms=700.0, usage=Usage(prompt_tokens=10,
                                                                                     completion_tokens=5)),
        _attempt("a", Contract.LANGUAGE, no=2, ttft_ms=30.0, total_ms=650.0),
        _attempt("b", Contract.TTFT, error_class=ErrorClass.HTTP_STATUS, error_code=429, total_ms=20.0),
    ]
    results = [
        ContractResult(INFO.round_id, "m", "a", Contract.TTFT, Outcome.PASS, "ok"),
        ContractResult(INFO.round_id, "m", "a", Contract.LANGUAGE, Outcome.FAIL, "language_mix"),
        ContractResult(INFO.round_id, "m", "a", Contract.OPENING, Outcome.INCONCLUSIVE, "few_replies"),
        ContractResult(INFO.round_id, "m", "b", Contract.TTFT, Outcome.TRANSPORT, "http_429"),
    ]
    endpoints = [Endpoint("m", "a", "A", prompt_price_usd=0.001, completion_price_usd=0.002), Endpoint("m", "b", "B")]
    return round_rollup(INFO, attempts, results, endpoints)


def _counters_say(r: RoundRollup) -> None:
    counters = {(c.name, c.tag, c.contract, c.label): c.value for c in r.counters}
    assert counters[(OUTCOMES, "a", "language", "fail")] == 1
    assert counters[(OUTCOMES, "a", "opening", "inconclusive")] == 1
    assert counters[(FAILURES, "a", "language", "language_mix")] == 1
    assert counters[(FAILURES, "b", "ttft", "http_4xx")] == 1  # a formed reason, by class
    assert not [k for k in counters if k[0] == FAILURES and k[2] == "opening"]  # inconclusive is no failure
    assert counters[(REQUESTS, "a", "language", "none")] == 2
    assert counters[(REQUESTS, "b", "ttft", "http_status")] == 1
    assert counters[(SPEND, "a", "", "reported")] == pytest.approx(0.002)
    assert counters[(SPEND, "a", "", "estimated")] == pytest.approx(10 * 0.001 + 5 * 0.002)
    assert counters[(FIRST_CHUNK + "_sum", "a", "", "")] == pytest.approx(0.27)
    assert counters[(DURATION + "_sum", "", "", "http_status")] == pytest.approx(0.02)


def _buckets_say(r: RoundRollup) -> None:
    buckets = {(b.name, b.tag, b.label, b.le): b.count for b in r.buckets}
    assert buckets[(FIRST_CHUNK, "a", "", INF)] == 3 and buckets[(FIRST_CHUNK, "a", "", 0.04)] == 1
    # a failed request is still an operation (per model), under its GenAI error.type
    assert buckets[(DURATION, "", "http_status", 0.02)] == 1 and buckets[(DURATION, "", "http_status", INF)] == 1
    assert buckets[(DURATION, "", "", INF)] == 3  # the ones that completed carry no error type
    assert (FIRST_CHUNK, "b", "", INF) not in buckets  # no first chunk: no observation


def _last_probes_say(r: RoundRollup) -> None:
    last = {(p.tag, p.contract): p for p in r.last}
    assert last[("a", "language")].ttft_s == pytest.approx(0.09)  # the first attempt, not the confirmation
    assert last[("a", "opening")].ttft_s is None  # judged from the others' replies
    assert last[("b", "ttft")].reason == "http_4xx"
