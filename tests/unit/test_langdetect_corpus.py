"""The multilingual corpus (tests/data/language_corpus.jsonl): accuracy report and ZERO false failures.

Regenerate the corpus with `python tests/data/lang_corpus_build.py` after editing lang_corpus_source.py.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tasks.config import ALL_LANGUAGES
from tasks.core import langdetect as L

pytestmark = pytest.mark.unit
CORPUS_PATH = Path(__file__).parents[1] / "data" / "language_corpus.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(line) for line in CORPUS_PATH.open(encoding="utf-8")]


@pytest.fixture(scope="module")
def judgements() -> dict[str, L.LanguageJudgement]:
    return {r["id"]: L.judge_text(r["text"], r["expected"]) for r in ROWS}


def test_corpus_covers_every_language_and_the_hard_pairs() -> None:
    clean = Counter(r["expected"] for r in ROWS if r["kind"] == "clean")
    assert all(clean[lang] >= 3 for lang in ALL_LANGUAGES), clean
    mixed = {r["id"].rsplit("-", 1)[0] for r in ROWS if r["kind"] == "mixed"}
    assert {"mixed-pt-es", "mixed-es-it", "mixed-ru-uk", "mixed-fr-it"} <= mixed
    assert sum(r["kind"] == "mojibake" for r in ROWS) >= 10


def test_zero_false_failures_on_clean_text(judgements: dict[str, L.LanguageJudgement]) -> None:
    false_failures = [
        (r["id"], judgements[r["id"]].reason, judgements[r["id"]].evidence)
        for r in ROWS
        if r["expect"] != "fail" and judgements[r["id"]].outcome.value == "fail"
    ]
    assert false_failures == []


def test_accuracy_report(judgements: dict[str, L.LanguageJudgement], capsys: pytest.CaptureFixture[str]) -> None:
    per_kind: dict[str, list[bool]] = {}
    for r in ROWS:
        v = judgements[r["id"]]
        ok = v.outcome.value == r["expect"] and (r["reason"] is None or v.reason == r["reason"])
        per_kind.setdefault(r["kind"], []).append(ok)
    with capsys.disabled():
        print("\nlanguage corpus accuracy (outcome and reason):")
        for kind, oks in sorted(per_kind.items()):
            print(f"  {kind:<12} {sum(oks):>3}/{len(oks):<3} {sum(oks) / len(oks):.0%}")
    total = [ok for oks in per_kind.values() for ok in oks]
    assert sum(total) / len(total) >= 0.95
    # Every deliberate failure must at least be caught as a failure (the reason may differ at the margin).
    caught = [judgements[r["id"]].outcome.value == "fail" for r in ROWS if r["expect"] == "fail"]
    assert all(caught)


@pytest.mark.parametrize(
    "row", [r for r in ROWS if r["kind"] in ("mixed", "mojibake", "switch")], ids=lambda r: r["id"]
)
def test_each_deliberate_failure_has_its_reason(
    row: dict[str, Any], judgements: dict[str, L.LanguageJudgement]
) -> None:
    v = judgements[row["id"]]
    assert (v.outcome.value, v.reason) == (row["expect"], row["reason"]), v.evidence
