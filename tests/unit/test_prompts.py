"""tasks.core.prompts: every probe request is pinned and streamed; the prompts say what the contracts expect."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema
import pytest

from tasks.config import ALL_LANGUAGES, CanaryConfig
from tasks.core.contracts import probed
from tasks.core.language_prompts import LANGUAGE_PROMPTS
from tasks.core.probe_request import build_request, prompt_language
from tasks.core.prompts import REFUSAL_MIN_EXPECTED_CHARS, STRUCTURED_SCHEMA
from tasks.core.types import Contract

pytestmark = pytest.mark.unit

CFG = CanaryConfig()
MODEL = "meta-llama/llama-3.3-70b-instruct"


@pytest.mark.parametrize("contract", probed(), ids=str)
def test_every_request_is_pinned_streamed_and_json_serialisable(contract: Contract) -> None:
    body = build_request(contract, MODEL, "deepinfra/fp8", "pt", CFG)
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["provider"]["only"] == ["deepinfra/fp8"]
    assert body["provider"]["allow_fallbacks"] is False
    assert body["provider"].get("require_parameters", False) is (contract is Contract.STRUCTURED)
    assert set(body["provider"]) <= {"only", "allow_fallbacks", "require_parameters"}  # additionalProperties
    assert isinstance(body["max_tokens"], int) and body["max_tokens"] > 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    json.dumps(body)


def test_requests_are_fresh_copies() -> None:
    first = build_request(Contract.STRUCTURED, MODEL, "a", None, CFG)
    first["response_format"]["json_schema"]["schema"]["required"].clear()
    first["messages"][0]["content"] = "changed"
    second = build_request(Contract.STRUCTURED, MODEL, "a", None, CFG)
    assert second["response_format"]["json_schema"]["schema"] == STRUCTURED_SCHEMA
    assert second["messages"][0]["content"] != "changed"
    assert STRUCTURED_SCHEMA["required"]


def test_structured_request_carries_the_strict_schema() -> None:
    body = build_request(Contract.STRUCTURED, MODEL, "fireworks", None, CFG)
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "character_card"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == STRUCTURED_SCHEMA
    assert "temperature" not in body  # require_parameters would filter endpoints on it


def test_structured_schema_is_valid_strict_and_discriminating() -> None:
    jsonschema.Draft202012Validator.check_schema(STRUCTURED_SCHEMA)
    assert STRUCTURED_SCHEMA["additionalProperties"] is False
    assert set(STRUCTURED_SCHEMA["required"]) == set(STRUCTURED_SCHEMA["properties"])
    types = {p["type"] for p in STRUCTURED_SCHEMA["properties"].values()}
    assert {"string", "integer", "boolean", "array"} <= types
    good = {
        "name": "Oren Vale",
        "age": 52,
        "character_class": "merchant",
        "is_hostile": False,
        "traits": ["shrewd", "jovial", "secretive"],
        "greeting": "Cold night for honest trade, friends!",
    }
    jsonschema.validate(good, STRUCTURED_SCHEMA)
    for bad in (
        {**good, "age": "52"},
        {**good, "character_class": "pirate"},
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "greeting"},
        {**good, "traits": [1, 2]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, STRUCTURED_SCHEMA)


def test_language_prompts_cover_the_17_languages_in_rotation_order() -> None:
    assert tuple(LANGUAGE_PROMPTS) == ALL_LANGUAGES
    assert len(ALL_LANGUAGES) == 17
    for language in ALL_LANGUAGES:
        body = build_request(Contract.LANGUAGE, MODEL, "x", language, CFG)
        assert [m["content"] for m in body["messages"]] == list(LANGUAGE_PROMPTS[language])


def test_language_prompts_are_distinct_and_invite_an_emphasis_action() -> None:
    texts = [system + user for system, user in LANGUAGE_PROMPTS.values()]
    assert len(set(texts)) == 17
    for language, (system, user) in LANGUAGE_PROMPTS.items():
        assert re.search(r"\*[^*\n]+\*", system), language  # shows the *action* form
        assert len(user) >= 60, language


_SCRIPTS = {
    "ru": r"[А-Яа-яЁё]",
    "uk": r"[А-Яа-яІіЇїЄєҐґ]",
    "ja": r"[\u3040-\u30ff]",
    "ko": r"[\uac00-\ud7af]",
    "zh": r"[\u4e00-\u9fff]",
    "hi": r"[\u0900-\u097f]",
    "ar": r"[\u0600-\u06ff]",
}


@pytest.mark.parametrize("language", ALL_LANGUAGES)
def test_language_prompt_is_wholly_in_its_language(language: str) -> None:
    """Each sentence of the system and user message is detected as the target language (lingua, local)."""
    detector = _detector()
    system, user = LANGUAGE_PROMPTS[language]
    for text in (system, user):
        letters = [c for c in text if c.isalpha()]
        if language in _SCRIPTS:  # non-Latin scripts: no stray Latin words
            latin = [c for c in letters if "a" <= c.lower() <= "z"]
            assert len(latin) <= 0.02 * len(letters), (language, "".join(latin))
        sentences = [s for s in re.split(r"(?<=[.!?。！？।])\s*", text) if len(s) >= 20]
        assert sentences
        for sentence in sentences:
            detected = detector.detect_language_of(sentence)
            assert detected is not None and detected.iso_code_639_1.name.lower() == language, sentence


@functools.cache
def _detector() -> Any:
    from lingua import IsoCode639_1, LanguageDetectorBuilder

    codes = [getattr(IsoCode639_1, code.upper()) for code in ALL_LANGUAGES]
    return LanguageDetectorBuilder.from_iso_codes_639_1(*codes).build()


def test_prompt_language() -> None:
    assert prompt_language(Contract.LANGUAGE, "ko") == "ko"
    assert prompt_language(Contract.TTFT, "ko") == "en"
    assert prompt_language(Contract.REFUSAL, None) == "en"
    with pytest.raises(ValueError, match="language probe"):
        prompt_language(Contract.LANGUAGE, "xx")
    with pytest.raises(ValueError, match="language probe"):
        build_request(Contract.LANGUAGE, MODEL, "x", None, CFG)


def test_opening_sends_no_request() -> None:
    with pytest.raises(ValueError, match="opening"):
        build_request(Contract.OPENING, MODEL, "x", None, CFG)


def test_refusal_prompt_asks_for_paragraphs_worth_the_minimum() -> None:
    body = build_request(Contract.REFUSAL, MODEL, "x", None, CFG)
    user = body["messages"][-1]["content"]
    assert "three to five paragraphs" in user
    # A 3-paragraph answer is ~1000+ characters; the minimum must sit well below it and the token budget.
    assert 200 <= REFUSAL_MIN_EXPECTED_CHARS <= 600
    assert body["max_tokens"] * 3 > REFUSAL_MIN_EXPECTED_CHARS * 2
