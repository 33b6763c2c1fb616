"""The synthetic probe prompts (docs/requirements.md 1.3: fixed prompts shipped with the project).

Every request is pinned to one endpoint (`provider.only = [tag]`, no fallbacks) and streamed. The roleplay
prompts invite replies that open with text or a Markdown emphasis action (``*She smiles*``), as real
roleplay traffic does, so the opening contract can judge their first characters.

* ttft        a short roleplay turn; only the first token matters
* refusal     one fixed tense-but-tasteful fantasy tavern scene (supported traffic), 3-5 paragraphs
* structured  a character card under STRUCTURED_SCHEMA (strict json_schema, parameters required)
* language    one roleplay turn per language, written wholly in that language (system and user alike)
* tools       a game master's assistant with three function tools: a turn that needs one, a control turn
              that needs none (tasks/core/tool_prompts.py; the attempt number picks the turn)

The language prompts themselves live in tasks/core/language_prompts.py. Each contract's SPEC points at its
body function here; tasks/core/probe_request.py builds the whole pinned request.
"""

from __future__ import annotations

import copy
from typing import Any

from tasks.config import ALL_LANGUAGES
from tasks.core.language_prompts import LANGUAGE_PROMPTS

#: Completion budgets (tokens). Generous so that reasoning models, whose thinking counts against max_tokens,
#: still finish the visible reply: a cut reply must mean the endpoint cut it, not us. Each contract's SPEC
#: (tasks/core/contracts/) names its own.
TTFT_MAX_TOKENS = 200
REFUSAL_MAX_TOKENS = 1200
STRUCTURED_MAX_TOKENS = 500
LANGUAGE_MAX_TOKENS = 600
#: Roleplay sampling temperature (not sent with structured output: require_parameters filters on it).
ROLEPLAY_TEMPERATURE = 0.8
#: The language recorded for contracts whose prompt is English.
DEFAULT_PROMPT_LANGUAGE = "en"

TTFT_MESSAGES: tuple[tuple[str, str], ...] = (
    (
        "system",
        "You are Captain Rhea Vance, the calm and witty captain of the airship Dawnstrider. Stay in "
        "character, speak in the first person and keep your replies short. Describe gestures in "
        "Markdown italics, for example *she adjusts her goggles*.",
    ),
    (
        "user",
        "*I rush onto the deck, out of breath* Captain! A storm front is closing in from the west. "
        "What are your orders?",
    ),
)

#: The refusal probe: one fixed scene with tension and a mild conflict, nothing explicit. Any mainstream
#: model answers it; a filter that blocks, empties or cuts it is blocking supported traffic.
REFUSAL_MESSAGES: tuple[tuple[str, str], ...] = (
    (
        "system",
        "You are the narrator of an interactive fantasy adventure. Write vivid, immersive prose in the third "
        "person, continue the scene exactly where the user leaves off, and stay inside the story. Scenes may "
        "hold tension, threats and conflict, as in any adventure novel; keep dialogue in quotes and describe "
        "the characters' actions and the atmosphere.",
    ),
    (
        "user",
        "The Rusty Flagon is crowded tonight. Rain hammers the shutters, and the smell of wet wool and ale "
        "hangs over the tables. Kael, a young ranger, sits by the hearth when the door slams open: three "
        "mercenaries stride in, and their leader, a scarred woman named Vessa, plants her gloved hand on "
        "Kael's table. \"You took a job that was ours,\" she says quietly, and the room falls silent. \"Give "
        "back the map, or we settle this outside.\" Kael's hand drifts toward the hilt of his sword, and "
        "the innkeeper slowly reaches under the counter.\n\n"
        "Continue the scene in three to five paragraphs. Build the tension, let the characters speak, and "
        "end on a moment that leaves the outcome open.",
    ),
)
#: A real answer to REFUSAL_MESSAGES (three or more paragraphs) is far longer; a reply below this many
#: characters with finish_reason "stop" has been cut short by something other than the model's judgement.
REFUSAL_MIN_EXPECTED_CHARS = 300

STRUCTURED_SCHEMA_NAME = "character_card"
#: Strict-mode compatible (every property required, no additional properties, no numeric bounds).
STRUCTURED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "character_class": {
            "type": "string",
            "enum": ["warrior", "mage", "rogue", "healer", "bard", "merchant"],
        },
        "is_hostile": {"type": "boolean"},
        "traits": {"type": "array", "items": {"type": "string"}},
        "greeting": {"type": "string"},
    },
    "required": ["name", "age", "character_class", "is_hostile", "traits", "greeting"],
    "additionalProperties": False,
}
STRUCTURED_MESSAGES: tuple[tuple[str, str], ...] = (
    (
        "system",
        "You are a game master's assistant for a fantasy roleplay. Reply with a single JSON object that "
        "matches the requested schema exactly, with no extra text.",
    ),
    (
        "user",
        "Create a character card for a travelling merchant who arrives at a mountain village inn during a "
        "snowstorm: name, age in whole years, character_class (warrior, mage, rogue, healer, bard or "
        "merchant), is_hostile (whether they mean the party harm), traits (three short personality traits) "
        "and greeting (one sentence they say as they walk in).",
    ),
)


def messages(pairs: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    """(role, content) pairs -> chat messages (fresh dicts)."""
    return [{"role": role, "content": content} for role, content in pairs]


def ttft_body(attempt_no: int, language: str) -> dict[str, Any]:
    return {"messages": messages(TTFT_MESSAGES)}


def refusal_body(attempt_no: int, language: str) -> dict[str, Any]:
    return {"messages": messages(REFUSAL_MESSAGES)}


def structured_body(attempt_no: int, language: str) -> dict[str, Any]:
    """The character card request: strict json_schema output (the spec adds `require_parameters`)."""
    return {
        "messages": messages(STRUCTURED_MESSAGES),
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": STRUCTURED_SCHEMA_NAME,
                "strict": True,
                "schema": copy.deepcopy(STRUCTURED_SCHEMA),
            },
        },
    }


def language_body(attempt_no: int, language: str) -> dict[str, Any]:
    """One roleplay turn written wholly in `language` (tasks/core/language_prompts.py)."""
    if language not in LANGUAGE_PROMPTS:
        raise ValueError(f"language probe needs one of {', '.join(ALL_LANGUAGES)} (got {language!r})")
    system, user = LANGUAGE_PROMPTS[language]
    return {"messages": messages((("system", system), ("user", user)))}
