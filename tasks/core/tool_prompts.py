"""The tools contract's fixed request (pure data; its SPEC in tasks/core/contracts/tools.py points at it).

A game master's assistant offers three function tools. The contract sends two turns with the same system
prompt and tools, one request each, told apart by the attempt number:

* attempt 1 (odd)  the **call turn**: a dice roll for a climbing check, which only `roll_dice` can answer
  (the system prompt forbids inventing a roll); the reply must call a tool.
* attempt 2 (even) the **control turn**: describe a room, which no tool can help with; the reply must not.

Neither turn names a tool, so the call is the model's own decision (no `tool_choice`, i.e. "auto", as agents
send it). No `require_parameters`: like real agent traffic, the request relies on the pin and on the endpoint
listing `tools` (tasks/core/plan.py sends it only then). The schemas have required fields, enums and a nested
object, so a broken argument encoder has room to show.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

CALL_TURN = 1
CONTROL_TURN = 2
#: The tool the call turn needs (a call to another offered tool is ambiguous evidence, not a pass).
EXPECTED_TOOL = "roll_dice"
#: Completion budget: a call is ~60 tokens, the control reply ~80; room for reasoning models' thinking.
TOOLS_MAX_TOKENS = 600

Turn = Literal["call", "control"]

TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "roll_dice",
            "description": (
                "Roll dice for a character's check and return each die and the total. Use it for every "
                "roll the story needs; never make up a result."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "character": {"type": "string", "description": "Who makes the check"},
                    "check": {
                        "type": "string",
                        "enum": ["attack", "climb", "perception", "persuasion", "stealth"],
                        "description": "What the roll is for",
                    },
                    "dice": {
                        "type": "object",
                        "description": "The dice to roll, e.g. two twenty-sided dice",
                        "properties": {
                            "count": {"type": "integer", "minimum": 1, "maximum": 10},
                            "sides": {"type": "integer", "enum": [4, 6, 8, 10, 12, 20, 100]},
                        },
                        "required": ["count", "sides"],
                        "additionalProperties": False,
                    },
                    "modifier": {"type": "integer", "description": "Bonus (or malus) added to the total"},
                },
                "required": ["character", "check", "dice"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lookup_rule",
            "description": "Look up the wording of a game rule in the rulebook.",
            "parameters": {
                "type": "object",
                "properties": {
                    "topic": {"type": "string", "description": "The rule to look up, e.g. 'falling damage'"},
                    "book": {"type": "string", "enum": ["core", "expanded"]},
                },
                "required": ["topic"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "update_inventory",
            "description": "Add or remove an item from a character's inventory.",
            "parameters": {
                "type": "object",
                "properties": {
                    "character": {"type": "string"},
                    "action": {"type": "string", "enum": ["add", "remove"]},
                    "item": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "quantity": {"type": "integer", "minimum": 1},
                        },
                        "required": ["name", "quantity"],
                        "additionalProperties": False,
                    },
                },
                "required": ["character", "action", "item"],
                "additionalProperties": False,
            },
        },
    },
)

TOOLS_SYSTEM = (
    "You are the game master's assistant in a fantasy tabletop roleplay. When a request needs a dice roll, "
    "a rule or an inventory change, use the matching tool: never invent a roll. When no tool is needed, "
    "answer directly in two or three vivid sentences."
)
#: The call turn: only `roll_dice` can answer it, and it must not be answered in prose.
CALL_USER = (
    "Kael tries to climb the icy cliff face above the pass. Roll the dice for his climb check: two "
    "twenty-sided dice, plus his +3 bonus."
)
#: The control turn: plain description, nothing a tool can do (no dice, rules or items in it).
CONTROL_USER = (
    "Before we go on, describe the tavern's kitchen as the party walks in: what do they smell and hear?"
)


def tools_turn(attempt_no: int) -> Turn:
    """Odd attempts are the call turn, even ones the control turn (a retry keeps its turn's parity)."""
    return "call" if attempt_no % 2 == 1 else "control"


def tool_schemas() -> dict[str, dict[str, Any]]:
    """Offered tool name -> its parameters JSON Schema (a fresh copy)."""
    return {t["function"]["name"]: copy.deepcopy(t["function"]["parameters"]) for t in TOOLS}


def tools_messages(attempt_no: int) -> list[dict[str, str]]:
    user = CALL_USER if tools_turn(attempt_no) == "call" else CONTROL_USER
    return [{"role": "system", "content": TOOLS_SYSTEM}, {"role": "user", "content": user}]


def tools_body_fields(attempt_no: int) -> dict[str, Any]:
    """The fields the tools contract adds to a probe body: messages and tools (fresh copies)."""
    return {"messages": tools_messages(attempt_no), "tools": copy.deepcopy(list(TOOLS))}
