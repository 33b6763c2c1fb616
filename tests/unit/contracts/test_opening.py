"""Opening contract (incident a): per-reply detection and the per-endpoint / per-round judgement."""

from __future__ import annotations

import pytest
from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.contracts import opening
from tasks.core.types import Contract, Outcome

pytestmark = pytest.mark.unit

OPENINGS = [
    ("quote_comma_star", '",*She turns toward the door.', True),
    ("fragment_then_emphasis", "ing *He draws his sword.*", True),
    ("fragment_glued", "ed* She laughs.", True),
    ("semicolon", "; The rain keeps falling.", True),
    ("dot_then_word", ".The innkeeper frowns.", True),
    ("comma", ", and then she left.", True),
    ("cjk_comma", "、彼女は笑った。", True),
    ("closing_paren", ") Kael stood.", True),
    ("emphasis", "*She smiles and sets down the mug.*", False),
    ("bold", "**Chapter One** The storm began.", False),
    ("underscore", "_whispers_ Come closer.", False),
    ("dialogue_quote", '"Hello, traveller," she says.', False),
    ("curly_quote", "“Hello,” she says.", False),
    ("guillemets", "« Bonjour », dit-elle.", False),
    ("japanese_quote", "「こんにちは」と彼女は言った。", False),
    ("dialogue_dash", "— Hola —dijo ella.", False),
    ("spanish_question", "¿Quién anda ahí?", False),
    ("ellipsis", "...I don't know what to say.", False),
    ("unicode_ellipsis", "…well, that was unexpected.", False),
    ("plain_text", "The door creaks open.", False),
    ("leading_newlines", "\n\n*She nods.*", False),
    ("cyrillic", "Анна улыбается.", False),
    ("cjk_text", "她笑了。", False),
    ("empty", "", False),
]


@pytest.mark.parametrize(("text", "corrupted"), [c[1:] for c in OPENINGS], ids=[c[0] for c in OPENINGS])
def test_is_corrupted_opening(text: str, corrupted: bool) -> None:
    assert opening.is_corrupted_opening(text) is corrupted


def replies(*texts: str, tag: str = "deepinfra/fp8") -> list:
    contracts = [Contract.TTFT, Contract.REFUSAL, Contract.LANGUAGE]
    return [attempt(contracts[i % 3], text=t, tag=tag, attempt_no=1 + i // 3) for i, t in enumerate(texts)]


GOOD = "*She smiles.* Welcome."
BAD = '",*She smiles.'

ENDPOINT_CASES = [
    (
        "three_of_three_corrupted",
        replies(BAD, BAD, BAD),
        Outcome.FAIL,
        "corrupted_opening",
        "corrupted openings (3/3)",
    ),
    ("two_of_three", replies(BAD, BAD, GOOD), Outcome.FAIL, "corrupted_opening", "corrupted openings (2/3)"),
    ("one_of_three", replies(BAD, GOOD, GOOD), Outcome.PASS, "ok", "corrupted openings (1/3)"),
    (
        "two_of_four_is_not_a_majority",
        replies(BAD, BAD, GOOD, GOOD),
        Outcome.PASS,
        "ok",
        "corrupted openings (2/4)",
    ),
    ("clean", replies(GOOD, GOOD, GOOD), Outcome.PASS, "ok", "corrupted openings (0/3)"),
    ("one_reply_only", replies(BAD), Outcome.INCONCLUSIVE, "few_replies", "text replies (1) < 2"),
    (
        "empty_replies_do_not_count",
        replies(BAD, "", "  "),
        Outcome.INCONCLUSIVE,
        "few_replies",
        "text replies (1) < 2",
    ),
]


@pytest.mark.parametrize(
    ("attempts", "outcome", "reason", "evidence"),
    [c[1:] for c in ENDPOINT_CASES],
    ids=[c[0] for c in ENDPOINT_CASES],
)
def test_judge_endpoint(attempts: list, outcome: Outcome, reason: str, evidence: str) -> None:
    j = opening.judge(attempts, CanaryConfig())
    assert (j.outcome, j.reason) == (outcome, reason)
    assert evidence in j.evidence


def test_structured_replies_and_pin_mismatches_are_ignored() -> None:
    attempts = [
        attempt(Contract.STRUCTURED, text='{"a": 1}'),
        attempt(Contract.TTFT, text=BAD, served_provider="Other"),
        attempt(Contract.REFUSAL, text=BAD),
    ]
    assert opening.count_openings(attempts)[:2] == (1, 1)


def test_incident_a_one_endpoint_among_clean_peers_fails() -> None:
    per_tag = {f"host{i}": replies(GOOD, GOOD, GOOD, tag=f"host{i}") for i in range(14)}
    per_tag["bad"] = replies(BAD, "ing *He", ";", tag="bad")
    out = opening.judge_round_openings(per_tag)
    assert out["bad"].outcome is Outcome.FAIL
    assert all(out[f"host{i}"].outcome is Outcome.PASS for i in range(14))


def test_most_endpoints_corrupted_means_the_prompt_is_suspect() -> None:
    per_tag = {f"h{i}": replies(BAD, BAD, GOOD, tag=f"h{i}") for i in range(3)}
    per_tag["ok"] = replies(GOOD, GOOD, GOOD, tag="ok")
    out = opening.judge_round_openings(per_tag)
    assert {t: j.reason for t, j in out.items()} == {
        "h0": "prompt_suspect",
        "h1": "prompt_suspect",
        "h2": "prompt_suspect",
        "ok": "ok",
    }
    assert all(out[f"h{i}"].outcome is Outcome.INCONCLUSIVE for i in range(3))


def test_two_endpoints_are_too_few_to_blame_the_prompt() -> None:
    per_tag = {"a": replies(BAD, BAD, BAD, tag="a"), "b": replies(BAD, BAD, BAD, tag="b")}
    out = opening.judge_round_openings(per_tag)
    assert out["a"].outcome is Outcome.FAIL and out["b"].outcome is Outcome.FAIL
