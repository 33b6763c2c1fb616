"""Language integrity (docs/requirements.md 2.4): each reply judged by tasks/core/langdetect.py; majority of three.

The caller (the probe task) runs one attempt; when `needs_confirmation(attempt)` says it failed, it runs two
more at once, and `judge` takes the majority of the three:
* more than half of the attempts `fail` -> `fail` with the most common failure reason;
* more than half `pass` -> `pass`;
* more than half `inconclusive` (or `transport`) -> the latest such judgement;
* otherwise `inconclusive` `no_majority` (e.g. fail + pass + transport: neither confirmed nor refuted).
A single attempt is its own majority. The expected language is `Attempt.language` (default "en").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tasks.config import CanaryConfig
from tasks.core.contracts.common import exchange_judgement
from tasks.core.contracts.spec import ContractSpec
from tasks.core.language_prompts import LANGUAGE_PROMPTS
from tasks.core.prompts import LANGUAGE_MAX_TOKENS, ROLEPLAY_TEMPERATURE, language_body
from tasks.core.types import Attempt, Contract, Judgement, Outcome, Reason

if TYPE_CHECKING:  # tasks.core.langdetect imports tasks.core.contracts.textscan: import it lazily to avoid a cycle
    from tasks.core.langdetect import LanguageJudgement


def expected_language(a: Attempt) -> str:
    return (a.language or "en").lower()


def reply_judgement(a: Attempt) -> LanguageJudgement | Judgement:
    """The detector's judgement of a completed reply, else the exchange's judgement (tasks/core/classify.py)."""
    from tasks.core.langdetect import SUPPORTED_LANGUAGES, judge_text

    broken = exchange_judgement(a)
    if broken is not None:
        return broken
    expected = expected_language(a)
    if expected not in SUPPORTED_LANGUAGES:
        return Judgement(
            Outcome.INCONCLUSIVE, Reason.UNSUPPORTED_LANGUAGE, f"language ({expected}) not supported"
        )
    return judge_text(a.text, expected)


def judge_attempt(a: Attempt) -> Judgement:
    v = reply_judgement(a)
    if isinstance(v, Judgement):
        return v
    return Judgement(v.outcome, v.reason, v.evidence)


def needs_confirmation(attempt: Attempt) -> bool:
    """True when this (first) attempt failed, so two more attempts must run before judging."""
    return judge_attempt(attempt).outcome is Outcome.FAIL


def majority(judgements: Sequence[Judgement]) -> Judgement:
    n = len(judgements)
    if n == 0:
        return Judgement(Outcome.INCONCLUSIVE, Reason.NO_ATTEMPTS, "attempts (0)")
    counts = Counter(j.outcome for j in judgements)
    tally = f"{counts[Outcome.FAIL]}/{n} fail, {counts[Outcome.PASS]}/{n} pass"
    if counts[Outcome.FAIL] * 2 > n:
        fails = [j for j in judgements if j.outcome is Outcome.FAIL]
        reason = Counter(j.reason for j in fails).most_common(1)[0][0]
        first = next(j for j in fails if j.reason == reason)
        return Judgement(Outcome.FAIL, reason, f"{first.evidence}; {tally}" if n > 1 else first.evidence)
    if counts[Outcome.PASS] * 2 > n:
        first = next(j for j in judgements if j.outcome is Outcome.PASS)
        return Judgement(Outcome.PASS, Reason.OK, f"{first.evidence}; {tally}" if n > 1 else first.evidence)
    for outcome in (Outcome.INCONCLUSIVE, Outcome.TRANSPORT):
        if counts[outcome] * 2 > n:
            return next(j for j in reversed(judgements) if j.outcome is outcome)
    return Judgement(Outcome.INCONCLUSIVE, Reason.NO_MAJORITY, tally)


def judge(attempts: Sequence[Attempt], cfg: CanaryConfig) -> Judgement:
    ordered = sorted(attempts, key=lambda a: a.attempt_no)
    return majority([judge_attempt(a) for a in ordered])


#: Asked in the endpoint's rotated language; a failed first attempt is confirmed by attempts 2 and 3 at once.
SPEC = ContractSpec(
    name=Contract.LANGUAGE,
    judge=judge,
    body=language_body,
    max_tokens=LANGUAGE_MAX_TOKENS,
    temperature=ROLEPLAY_TEMPERATURE,
    rotated_language=True,
    prompt_languages=tuple(LANGUAGE_PROMPTS),
    confirm_first=needs_confirmation,
    confirm_attempts=(2, 3),
    free_text=True,
    hard_by_default=True,
)
