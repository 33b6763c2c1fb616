"""The language contract's majority of its attempts (tasks/core/contracts/language.py), whole judgements: no
attempt, one, a tie, the most common failure reason, and the language an attempt without one is judged in."""

from __future__ import annotations

import pytest
from attempt_factory import attempt

from tasks.core.contracts.language import expected_language, majority, reply_judgement
from tasks.core.types import Contract, Judgement, Outcome, Reason

pytestmark = pytest.mark.unit
P1, P2 = Judgement(Outcome.PASS, Reason.OK, "p1"), Judgement(Outcome.PASS, Reason.OK, "p2")
MIX, WRONG = Judgement(Outcome.FAIL, "language_mix", "mix"), Judgement(Outcome.FAIL, "wrong_language", "wrong")
INC = Judgement(Outcome.INCONCLUSIVE, "few_words", "inc")


@pytest.mark.parametrize(("judgements", "expected"), [
    ([], Judgement(Outcome.INCONCLUSIVE, Reason.NO_ATTEMPTS, "attempts (0)")),
    ([P1], P1), ([MIX], MIX),
    ([P1, P2], Judgement(Outcome.PASS, Reason.OK, "p1; 0/2 fail, 2/2 pass")),
    ([MIX, P1], Judgement(Outcome.INCONCLUSIVE, Reason.NO_MAJORITY, "1/2 fail, 1/2 pass")),
    ([WRONG, MIX, MIX], Judgement(Outcome.FAIL, "language_mix", "mix; 3/3 fail, 0/3 pass")),
    ([MIX, WRONG, WRONG, P1], Judgement(Outcome.FAIL, "wrong_language", "wrong; 3/4 fail, 1/4 pass")),
    ([P1, INC, MIX], Judgement(Outcome.INCONCLUSIVE, Reason.NO_MAJORITY, "1/3 fail, 1/3 pass")),
    ([P1, INC], Judgement(Outcome.INCONCLUSIVE, Reason.NO_MAJORITY, "0/2 fail, 1/2 pass")),
    ([INC, P1, INC], INC),
    ([MIX, MIX], Judgement(Outcome.FAIL, "language_mix", "mix; 2/2 fail, 0/2 pass")),
], ids=["none", "one-pass", "one-fail", "two-pass", "tie", "most-common-reason", "three-of-four", "split",
        "half-inconclusive", "most-inconclusive", "two-fail"])
def test_the_majority_whole(judgements: list[Judgement], expected: Judgement) -> None:
    assert majority(judgements) == expected


def test_an_attempt_without_a_language_is_english_and_an_unknown_one_is_said() -> None:
    assert expected_language(attempt(Contract.LANGUAGE, language=None)) == "en"
    assert expected_language(attempt(Contract.LANGUAGE, language="DE")) == "de"
    assert reply_judgement(attempt(Contract.LANGUAGE, language="tlh")) == Judgement(
        Outcome.INCONCLUSIVE, Reason.UNSUPPORTED_LANGUAGE, "language (tlh) not supported")
