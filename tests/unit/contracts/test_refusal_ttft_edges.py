"""Boundaries of the refusal and ttft contracts (tasks/core/contracts/refusal.py, refusal_patterns.py, ttft.py):
a reply exactly as long as the minimum or the truncation limit, a refusal pattern in a reply exactly as long as
the scan's limits, a stream with no text that ran exactly the ttft limit, and the evidence of one that did not."""

from __future__ import annotations

import pytest
from attempt_factory import attempt

from tasks.core.contracts import refusal, ttft
from tasks.core.contracts.refusal_patterns import SHORT_REPLY_CHARS, START_MAX_CHARS, find_refusal
from tasks.core.types import Contract, Judgement, Outcome, Reason

pytestmark = pytest.mark.unit


def test_a_reply_exactly_as_long_as_the_minimum_or_the_truncation_limit_passes() -> None:
    assert refusal.judge_attempt(attempt(text="x" * 50), min_chars=50).outcome is Outcome.PASS
    assert refusal.judge_attempt(attempt(text="x" * 49), min_chars=50).reason == Reason.TOO_SHORT
    cut = refusal.judge_attempt(attempt(text="x" * 100, finish_reason="length"), min_chars=50)
    assert cut == Judgement(Outcome.PASS, Reason.OK, "text_chars (100) >= 50, finish_reason (length)")
    assert refusal.judge_attempt(attempt(text="x" * 99, finish_reason="length"), min_chars=50) == Judgement(
        Outcome.FAIL, Reason.TRUNCATED, "finish_reason (length), text_chars (99) < 100")


SHORT = " I cannot help with that."
START = "I'm sorry, but I can't"


@pytest.mark.parametrize(("text", "found"), [
    ("x" * (SHORT_REPLY_CHARS - 1 - len(SHORT)) + SHORT, ("short", "I cannot help with that")),
    ("x" * (SHORT_REPLY_CHARS - len(SHORT)) + SHORT, None),
    (START + " x" * ((START_MAX_CHARS - 1 - len(START)) // 2), ("en", START)),
    (START + " x" * ((START_MAX_CHARS - len(START)) // 2), None),
], ids=["short-399", "short-400", "start-999", "start-1000"])
def test_refusal_patterns_are_looked_for_below_the_scans_limits(text: str, found: tuple[str, str] | None) -> None:
    assert find_refusal(text) == found


def test_no_text_within_exactly_the_ttft_limit_fails_and_below_it_says_what_it_saw() -> None:
    assert ttft.judge_attempt(attempt(Contract.TTFT, ttft_ms=None, total_ms=10000.0, text=""), 10) == Judgement(
        Outcome.FAIL, Reason.TTFT_EXCEEDED, "ttft_ms (none after 10000) > 10000; keepalives (0)")
    assert ttft.judge_attempt(attempt(Contract.TTFT, ttft_ms=None, total_ms=9999.4, text=""), 10) == Judgement(
        Outcome.INCONCLUSIVE, Reason.NO_TEXT, "ttft_ms (none), total_ms (9999), finish (stop)")


def test_a_long_refusal_is_quoted_in_its_first_80_characters() -> None:
    text = "Özür dilerim, fakat " + "x" * 60 + "yapamam."
    assert refusal.judge_attempt(attempt(text=text)) == Judgement(
        Outcome.FAIL, Reason.REFUSAL_PATTERN, f"refusal (tr) {text[:80]!r} in text_chars (88)")
