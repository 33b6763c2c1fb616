"""What every contract judge shares (tasks/core/contracts/common.py): the judgement of an endpoint with no
attempt at all, which attempt's judgement stands, and how a missing time reads in evidence."""

from __future__ import annotations

import pytest

from tasks.core.contracts.common import fmt_ms, latest_judgement
from tasks.core.types import Judgement, Outcome, Reason

pytestmark = pytest.mark.unit


def test_no_attempt_is_inconclusive_and_says_so() -> None:
    assert latest_judgement([]) == Judgement(Outcome.INCONCLUSIVE, Reason.NO_ATTEMPTS, "attempts (0)")


def test_the_latest_pass_or_fail_stands_then_inconclusive_then_transport() -> None:
    p, f = Judgement(Outcome.PASS, "ok"), Judgement(Outcome.FAIL, "x")
    i, t = Judgement(Outcome.INCONCLUSIVE, "i"), Judgement(Outcome.TRANSPORT, "t")
    assert latest_judgement([f, p, i, t]) is p and latest_judgement([p, f, t]) is f
    assert latest_judgement([t, i, t]) is i and latest_judgement([t, Judgement(Outcome.TRANSPORT, "u")]).reason == "u"


def test_a_time_reads_in_whole_milliseconds_or_none() -> None:
    assert (fmt_ms(None), fmt_ms(12.4), fmt_ms(0.0), fmt_ms(1999.6)) == ("none", "12", "0", "2000")
