"""Edges of the live watcher's Prometheus reading (tasks/core/live_promql.py) that the captured answers do not
reach: each refusal's one line, the query for a short window and for model names with upper-case or non-ASCII
characters, and how records are built when the families disagree, miss a series or mix models and endpoints."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tasks.core.live_promql import (
    ATTEMPTS,
    JUDGED,
    QUALITY_FAILURES,
    PromError,
    Sample,
    live_counts,
    live_query,
    parse_vector,
    promql_string,
    split_failures,
)
from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality

pytestmark = pytest.mark.unit
AT = datetime(2026, 12, 6, 2, 8, tzinfo=UTC)
M, OTHER = "acme/m", "acme/other"
TOOLS, FAIL, OK = LiveQuality.TOOLS, LiveOutcome.QUALITY_FAIL, LiveOutcome.OK


@pytest.mark.parametrize(("body", "line"), [
    (b"<html>502</html>", "something that is not JSON"),
    (b"[1, 2]", "JSON that is not an object"),
    ({"status": "error"}, "error: no error text"),
    ({"status": "error", "errorType": "bad_data", "error": "x " * 400}, "bad_data: " + "x " * 150),
    ({"status": "success", "data": [1]}, "a list where an instant vector was asked for"),
    ({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}},
     "a sample this code cannot read (KeyError)"),
], ids=["html", "array", "bare-error", "long-error", "list-data", "no-value"])
def test_each_refusal_is_its_own_line(body: object, line: str) -> None:
    with pytest.raises(PromError) as caught:
        parse_vector(body)  # type: ignore[arg-type]
    assert str(caught.value) == line


def test_a_window_under_a_second_asks_for_one_second() -> None:
    assert live_query(ATTEMPTS, 0.4).endswith(f"(increase({ATTEMPTS}[1s])) > 0")


def test_model_names_keep_their_upper_case_and_non_ascii_characters() -> None:
    query = live_query(ATTEMPTS, 60, ["x-ai/Grok-X.1", "acme/café-😀"])
    assert '{model=~"acme/café-😀|x-ai/Grok-X\\\\.1"}' in query
    assert promql_string("m/😀") == '"m/😀"'


def test_the_most_frequent_reasons_come_first() -> None:
    assert split_failures(3, [("a_rare", 1), ("b_common", 5)]) == [("b_common", 3)]


def s(family_labels: dict[str, str], value: float) -> Sample:
    return Sample(family_labels, value)


def test_each_endpoint_gets_its_own_reasons_and_other_models_are_left_out() -> None:
    def ep(tag: str | None, provider: str | None, **more: str) -> dict[str, str]:
        labels = {"model": M, "quality": "tools", **more}
        return labels | ({"tag": tag} if tag is not None else {}) | ({"provider": provider} if provider else {})

    found = {
        JUDGED: [s(ep("alpha", "Other", model=OTHER, outcome="quality_fail"), 9),  # another model first
                 s(ep("alpha", "Alpha", outcome="quality_fail"), 2),
                 s(ep("alpha", "Alpha2", outcome="quality_fail"), 1),
                 s(ep(None, "Anon", outcome="quality_fail"), 1), s(ep("XXXX", "Anon", outcome="quality_fail"), 1),
                 s(ep("beta", "Beta", outcome="quality_fail"), 1),
                 s(ep("gamma", None, outcome="quality_fail"), 1), s(ep("gamma", "XXXX", outcome="quality_fail"), 1),
                 s(ep("beta", "Beta", quality="bogus", outcome="ok"), 4),  # a class this code does not know
                 s(ep("beta", "Beta", outcome="ok"), 0)],
        QUALITY_FAILURES: [s(ep("alpha", "Alpha", reason="bad_json_args"), 2),
                           s(ep("alpha", "Alpha2", reason="no_call"), 1),
                           s(ep("alpha", "Alpha", model=OTHER, reason="unknown_tool"), 5),
                           s(ep("XXXX", "Anon", reason="schema_mismatch"), 1),
                           s(ep("gamma", "XXXX", reason="no_call"), 1)],
    }

    def row(tag: str | None, provider: str | None, n: int, reason: str | None) -> LiveCount:
        return LiveCount(AT, M, "*", 0, tag, provider, FAIL, n, TOOLS, reason)

    assert live_counts(M, found, AT) == [
        row("alpha", "Alpha", 2, "bad_json_args"), row("alpha", "Alpha2", 1, "no_call"), row(None, "Anon", 1, None),
        row("XXXX", "Anon", 1, "schema_mismatch"), row("beta", "Beta", 1, None), row("gamma", None, 1, None),
        row("gamma", "XXXX", 1, "no_call")]


def test_attempts_alone_are_records_too() -> None:
    found = {ATTEMPTS: [s({"model": M, "tag": "a", "provider": "A", "outcome": "ok"}, 3.2)]}
    assert live_counts(M, found, AT) == [LiveCount(AT, M, "*", 0, "a", "A", OK, 3)]
    assert live_counts(M, {JUDGED: [s({"model": M, "quality": "tools", "outcome": "ok"}, 1)]}, AT) == [
        LiveCount(AT, M, "*", 0, None, None, OK, 1, TOOLS, "ok")]
