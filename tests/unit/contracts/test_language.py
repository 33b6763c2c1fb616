"""Language contract: per-attempt verdicts, the confirmation trigger and the majority of three."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.contracts import language
from tasks.core.types import Contract, ErrorClass, Judgement, Outcome

pytestmark = pytest.mark.unit
CFG = CanaryConfig()
CORPUS = {
    row["id"]: row
    for row in map(
        json.loads, (Path(__file__).parents[2] / "data" / "language_corpus.jsonl").open(encoding="utf-8")
    )
}
PT = CORPUS["clean-pt-0"]["text"]
PT_ES_MIX = CORPUS["mixed-pt-es-0"]["text"]
ES = CORPUS["clean-es-1"]["text"]


def lang_attempt(text: str, lang: str = "pt", n: int = 1, **kw: object) -> object:
    return attempt(Contract.LANGUAGE, text=text, language=lang, attempt_no=n, **kw)


CASES = [
    ("clean_pt", [lang_attempt(PT)], Outcome.PASS, "ok", "detected (pt"),
    (
        "incident_b_three_of_three",
        [lang_attempt(PT_ES_MIX, n=i) for i in (1, 2, 3)],
        Outcome.FAIL,
        "language_mix",
        "3/3 fail",
    ),
    (
        "mix_not_confirmed",
        [lang_attempt(PT_ES_MIX), lang_attempt(PT, n=2), lang_attempt(PT, n=3)],
        Outcome.PASS,
        "ok",
        "1/3 fail, 2/3 pass",
    ),
    (
        "mix_confirmed_once",
        [lang_attempt(PT_ES_MIX), lang_attempt(PT_ES_MIX, n=2), lang_attempt(PT, n=3)],
        Outcome.FAIL,
        "language_mix",
        "2/3 fail",
    ),
    ("switch", [lang_attempt(ES, n=i) for i in (1, 2, 3)], Outcome.FAIL, "language_switch", "detected (es"),
    (
        "no_majority",
        [
            lang_attempt(PT_ES_MIX),
            lang_attempt(PT, n=2),
            lang_attempt("", n=3, error_class=ErrorClass.STREAM_CUT, finish_reason=None),
        ],
        Outcome.INCONCLUSIVE,
        "no_majority",
        "1/3 fail, 1/3 pass",
    ),
    ("too_short", [lang_attempt("Olá!")], Outcome.INCONCLUSIVE, "too_short", "letters (3) < 40"),
    (
        "transport",
        [
            lang_attempt(
                "", http_status=429, error_class=ErrorClass.HTTP_STATUS, error_code=429, finish_reason=None
            )
        ],
        Outcome.TRANSPORT,
        "http_429",
        "http_status (429)",
    ),
    (
        "mojibake",
        [lang_attempt(CORPUS["mojibake-pt-0"]["text"], n=i) for i in (1, 2, 3)],
        Outcome.FAIL,
        "encoding_corruption",
        "mojibake",
    ),
]


@pytest.mark.parametrize(
    ("attempts", "outcome", "reason", "evidence"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_language_golden(attempts: list, outcome: Outcome, reason: str, evidence: str) -> None:
    j = language.judge(attempts, CFG)
    assert (j.outcome, j.reason) == (outcome, reason), j.evidence
    assert evidence in j.evidence


def test_unsupported_prompt_language_is_inconclusive_not_a_crash() -> None:
    j = language.judge([lang_attempt(PT, lang="tlh")], CFG)
    assert (j.outcome, j.reason) == (Outcome.INCONCLUSIVE, "unsupported_language")


def test_needs_confirmation_only_on_failure() -> None:
    assert language.needs_confirmation(lang_attempt(PT_ES_MIX))
    assert not language.needs_confirmation(lang_attempt(PT))
    assert not language.needs_confirmation(lang_attempt("Olá!"))
    assert not language.needs_confirmation(lang_attempt("", error_class=ErrorClass.CONNECT, http_status=None))


def test_expected_language_comes_from_the_attempt() -> None:
    assert language.judge([lang_attempt(ES, lang="es")], CFG).outcome is Outcome.PASS
    assert language.judge([lang_attempt(ES, lang="pt")], CFG).outcome is Outcome.FAIL


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        (["fail"], "fail"),
        (["pass"], "pass"),
        (["fail", "fail", "pass"], "fail"),
        (["fail", "pass", "pass"], "pass"),
        (["fail", "transport", "transport"], "transport"),
        (["fail", "inconclusive", "inconclusive"], "inconclusive"),
        (["fail", "fail"], "fail"),
        (["fail", "pass"], "inconclusive"),
        ([], "inconclusive"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, list) else v,
)
def test_majority_table(outcomes: list[str], expected: str) -> None:
    js = [Judgement(Outcome(o), o, o) for o in outcomes]
    assert language.majority(js).outcome == Outcome(expected)
