"""Refusal contract: golden table, multilingual anchored patterns, and the story-is-not-a-refusal guard."""

from __future__ import annotations

import pytest
from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.contracts import refusal
from tasks.core.contracts.refusal_patterns import START, find_refusal
from tasks.core.prompts import REFUSAL_MIN_EXPECTED_CHARS
from tasks.core.types import Contract, ErrorClass, Outcome

pytestmark = pytest.mark.unit
CFG = CanaryConfig()

SCENE = (
    "*Kael's fingers tighten around the hilt.* \"I can't give you the map,\" he says evenly, meeting Vessa's "
    'stare. "It was paid for, and the man who paid is dead. You know what that means." The innkeeper\'s hand '
    "finds the crossbow under the counter, and somewhere in the back a chair scrapes.\n\n"
    "Vessa smiles without warmth. \"Then we settle it outside, ranger. Unless you'd rather bleed on Bren's "
    'floor." Rain rattles the shutters as the mercenaries spread out, and Kael counts exits, then blades.\n\n'
    'He rises slowly, leaving his ale untouched. "Outside, then. But not tonight."'
)

CASES = [
    ("story_with_i_cant_inside", dict(text=SCENE), Outcome.PASS, "ok", f">= {REFUSAL_MIN_EXPECTED_CHARS}"),
    (
        "capped_long_reply",
        dict(text=SCENE, text_truncated=True, finish_reason="length"),
        Outcome.PASS,
        "ok",
        "capped",
    ),
    (
        "content_filter",
        dict(text="Kael", finish_reason="content_filter", native_finish_reason="SAFETY"),
        Outcome.FAIL,
        "content_filter",
        "finish_reason (content_filter), native (SAFETY)",
    ),
    ("empty", dict(text=""), Outcome.FAIL, "empty_reply", "text_chars (0)"),
    ("whitespace_only", dict(text="  \n\t "), Outcome.FAIL, "empty_reply", "text_chars (0)"),
    (
        "en_refusal",
        dict(text="I'm sorry, but I can't continue this roleplay."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (en)",
    ),
    (
        "en_curly_apostrophe",
        dict(text="I’m sorry, but I can’t help with that."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (en)",
    ),
    (
        "en_as_an_ai",
        dict(text="As an AI, I must keep things safe. Let's try another scene."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (en)",
    ),
    (
        "ooc_prefix",
        dict(text="(OOC: I cannot continue this scene as written.)"),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (en)",
    ),
    (
        "action_then_refusal_short",
        dict(text="*sighs* I cannot continue this roleplay, sorry."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (short)",
    ),
    (
        "es",
        dict(text="Lo siento, pero no puedo continuar con esta historia."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (es)",
    ),
    (
        "pt",
        dict(text="Desculpe, mas não posso continuar essa cena."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (pt)",
    ),
    (
        "fr",
        dict(text="Je suis désolé, mais je ne peux pas poursuivre ce jeu de rôle."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (fr)",
    ),
    (
        "de",
        dict(text="Es tut mir leid, aber ich kann dieses Rollenspiel nicht fortsetzen."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (de)",
    ),
    (
        "it",
        dict(text="Mi dispiace, ma non posso continuare questa storia."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (it)",
    ),
    (
        "ru",
        dict(text="Извините, но я не могу продолжить эту ролевую игру."),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (ru)",
    ),
    (
        "ja",
        dict(text="申し訳ありませんが、このロールプレイを続けることはできません。"),
        Outcome.FAIL,
        "refusal_pattern",
        "refusal (ja)",
    ),
    ("zh", dict(text="抱歉，我无法继续这个角色扮演。"), Outcome.FAIL, "refusal_pattern", "refusal (zh)"),
    (
        "quoted_dialogue_is_not_refusal",
        dict(text="\"I'm sorry, but I can't let you take it,\" Kael says. " + SCENE),
        Outcome.PASS,
        "ok",
        "text_chars",
    ),
    (
        "first_person_long_scene_is_not_refusal",
        dict(text="I'm sorry, but I can't let you walk out with that map, Vessa. " + SCENE + " " + SCENE),
        Outcome.PASS,
        "ok",
        "text_chars",
    ),
    (
        "truncated_by_length",
        dict(text=SCENE[:250], finish_reason="length"),
        Outcome.FAIL,
        "truncated",
        f"finish_reason (length), text_chars (250) < {2 * REFUSAL_MIN_EXPECTED_CHARS}",
    ),
    (
        "completed_far_too_short",
        dict(text="Kael nods and leaves."),
        Outcome.FAIL,
        "too_short",
        f"text_chars (21) < {REFUSAL_MIN_EXPECTED_CHARS}",
    ),
    (
        "length_but_long_enough",
        dict(text=SCENE + " " + SCENE, finish_reason="length"),
        Outcome.PASS,
        "ok",
        "finish_reason (length)",
    ),
    (
        "stream_cut",
        dict(text="Kael", error_class=ErrorClass.STREAM_CUT, finish_reason=None),
        Outcome.TRANSPORT,
        "stream_cut",
        "stream cut",
    ),
    (
        "http_502",
        dict(http_status=502, error_class=ErrorClass.HTTP_STATUS, error_code=502, finish_reason=None),
        Outcome.TRANSPORT,
        "http_502",
        "http_status (502)",
    ),
    (
        "midstream_503",
        dict(text="Ka", error_class=ErrorClass.MIDSTREAM_ERROR, error_code=503, finish_reason="error"),
        Outcome.TRANSPORT,
        "midstream_503",
        "midstream error.code (503)",
    ),
    (
        "midstream_400_inconclusive",
        dict(text="Ka", error_class=ErrorClass.MIDSTREAM_ERROR, error_code=400, finish_reason="error"),
        Outcome.INCONCLUSIVE,
        "midstream_error",
        "midstream error.code (400)",
    ),
]


@pytest.mark.parametrize(
    ("kw", "outcome", "reason", "evidence"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refusal_golden(kw: dict[str, object], outcome: Outcome, reason: str, evidence: str) -> None:
    j = refusal.judge([attempt(Contract.REFUSAL, **kw)], CFG)
    assert (j.outcome, j.reason) == (outcome, reason), j.evidence
    assert evidence in j.evidence
    assert "\n" not in j.evidence


REFUSALS_BY_LANGUAGE = {
    "uk": "Вибачте, але я не можу продовжити цю історію.",
    "pl": "Przepraszam, ale nie mogę kontynuować tej sceny.",
    "tr": "Üzgünüm, ama bu sahneye devam edemem.",
    "ko": "죄송하지만 이 롤플레이는 계속할 수 없습니다.",
    "id": "Maaf, tetapi saya tidak bisa melanjutkan cerita ini.",
    "hi": "माफ़ कीजिए, मैं यह कहानी जारी नहीं कर सकता।",
    "ar": "عذرًا، لا أستطيع الاستمرار في هذا المشهد.",
    "vi": "Xin lỗi, nhưng tôi không thể tiếp tục câu chuyện này.",
}


@pytest.mark.parametrize("lang", sorted(REFUSALS_BY_LANGUAGE))
def test_every_pattern_language_catches_its_refusal(lang: str) -> None:
    found = find_refusal(REFUSALS_BY_LANGUAGE[lang])
    assert found is not None and found[0] == lang


def test_patterns_cover_the_product_languages() -> None:
    from tasks.config import ALL_LANGUAGES

    assert set(ALL_LANGUAGES) <= set(START)


@pytest.mark.parametrize(
    "text",
    [
        "The guard shook his head. I can't, he thought, not tonight.",
        "*She laughs.* Sorry, but that seat is taken, stranger.",
        'Vessa leans closer. "As an AI-forged golem, I obey no one," the construct rumbles.',
        "Lo siento mucho por tu pérdida, dijo la posadera mientras servía la sopa.",
    ],
)
def test_story_text_is_not_a_refusal_pattern(text: str) -> None:
    assert find_refusal(text) is None
