"""What the fleet's endpoints say: corpus, language guess, fault text and structured instances (pure)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from provider_canary.simulator import structured, text
from provider_canary.simulator.faults import FAULT_KINDS, Fault
from provider_canary.simulator.fleet_file import load_fleet
from provider_canary.simulator.language import LANGUAGES, detect_language
from provider_canary.simulator.plan import plan_reply

pytestmark = pytest.mark.unit

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "character": {"type": "string", "minLength": 1},
        "mood": {"type": "string", "enum": ["calm", "angry", "sad"]},
        "intensity": {"type": "integer", "minimum": 1, "maximum": 5},
        "confidence": {"type": "number"},
        "in_character": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "scene": {"$ref": "#/$defs/scene"},
    },
    "required": ["character", "mood", "intensity", "in_character", "tags", "scene"],
    "additionalProperties": False,
    "$defs": {
        "scene": {
            "type": "object",
            "properties": {"place": {"type": "string"}},
            "required": ["place"],
            "additionalProperties": False,
        }
    },
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_corpus_sentences_are_detected_as_their_language(lang: str) -> None:
    entry = text.corpus()[lang]
    assert len(entry["sentences"]) >= 10
    assert any(s.startswith("*") for s in entry["sentences"])
    for sentence in [*entry["sentences"], entry["refusal"]]:
        assert detect_language(sentence) == lang, sentence


@pytest.mark.parametrize("lang", LANGUAGES)
def test_healthy_reply_is_long_deterministic_and_in_language(lang: str) -> None:
    reply = text.reply_text(lang, 7)
    assert reply == text.reply_text(lang, 7)
    assert detect_language(reply) == lang
    if not text.is_unspaced(lang):
        assert len(reply) >= 400
    pieces = text.split_pieces(reply, 7, unspaced=text.is_unspaced(lang))
    assert "".join(pieces) == reply and len(pieces) >= 10


def test_mixed_reply_alternates_languages_by_sentence() -> None:
    reply = text.mixed_reply("pt", "es", 3)
    pt, es = set(text.corpus()["pt"]["sentences"]), set(text.corpus()["es"]["sentences"])
    found = [("pt" if s in reply else "") for s in pt] + [("es" if s in reply else "") for s in es]
    assert found.count("pt") >= 3 and found.count("es") >= 2


def test_mojibake_looks_like_cp1252_misreading() -> None:
    assert text.mojibake("café ’") == "cafÃ© â€™"


def test_structured_instance_validates_and_violations_do_not() -> None:
    for seed in range(20):
        value = structured.instance(SCHEMA, "pt", seed)
        jsonschema.validate(value, SCHEMA)
        rendered = structured.render(value, seed)
        assert json.loads(rendered) == value
        for mode in ("missing_required", "wrong_enum", "wrong_type", "extra_key"):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(structured.violate(value, SCHEMA, mode), SCHEMA)
        for mode in ("truncated", "trailing_comma", "single_quotes"):
            with pytest.raises(ValueError):
                json.loads(structured.make_invalid(rendered, mode))


def _fault(kind: str, **params: Any) -> Fault:
    spec = FAULT_KINDS[kind]
    full = {k: p.default for k, p in spec.params.items()} | params
    return Fault(kind, 1.0, spec.applies_to, full)


def _plan(kind: str | None, content: str, **params: Any) -> Any:
    fleet = load_fleet("provider_canary/simulator/fleets/default.toml")
    model = fleet.models[0]
    body = {"model": model.id, "messages": [{"role": "user", "content": content}]}
    return plan_reply(body, model, model.endpoints[0], _fault(kind, **params) if kind else None, 11)


PT = "Continue a cena na taverna, por favor. Ela está esperando você perto da lareira."


def test_plans_follow_their_fault() -> None:
    assert detect_language(_plan(None, PT).content) == "pt"
    assert _plan("corrupted_opening", PT, prefixes=['",']).content.startswith('",*')
    assert detect_language(_plan("language_switch", PT, to="de").content) == "de"
    assert "Ã" in _plan("mojibake", PT).content
    assert _plan("refusal", PT).content == text.corpus()["pt"]["refusal"]
    cf = _plan("content_filter", PT)
    assert (cf.content, cf.finish_reason, cf.native_finish_reason) == ("", "content_filter", "SAFETY")
    tr = _plan("truncated", PT, words=3)
    assert len(tr.content.split()) == 3 and tr.finish_reason == "length"
    assert _plan("empty_reply", PT).content == ""
    assert _plan("pin_not_honoured", PT).provider != "DeepInfra"
    assert _plan("pin_not_honoured", PT, served_by="Mystery").provider == "Mystery"


def test_max_tokens_cuts_with_length() -> None:
    fleet = load_fleet("provider_canary/simulator/fleets/default.toml")
    model = fleet.models[0]
    body = {
        "model": model.id,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "Go on, tell me more."}],
    }
    plan = plan_reply(body, model, model.endpoints[0], None, 5)
    assert plan.finish_reason == "length" and 0 < text.estimate_tokens(plan.content) <= 10
