"""The tools contract tests' attempts (test_tools.py, test_tools_peers.py): the schemas they are judged against, a
tool call, the two turns (1: the call turn, 2: the control turn), and the judge with those schemas."""

from __future__ import annotations

import json
from typing import Any

from attempt_factory import attempt

from tasks.config import CanaryConfig
from tasks.core.contracts import tools
from tasks.core.types import Attempt, Contract, Judgement, ToolCall

CFG = CanaryConfig()
SCHEMAS: dict[str, dict[str, Any]] = {
    "roll_dice": {
        "type": "object",
        "properties": {
            "character": {"type": "string"},
            "check": {"type": "string", "enum": ["climb", "stealth"]},
            "dice": {
                "type": "object",
                "properties": {"count": {"type": "integer"}, "sides": {"type": "integer", "enum": [6, 20]}},
                "required": ["count", "sides"],
                "additionalProperties": False,
            },
        },
        "required": ["character", "check", "dice"],
        "additionalProperties": False,
    },
    "lookup_rule": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
}
GOOD_ARGS = {"character": "Kael", "check": "climb", "dice": {"count": 2, "sides": 20}}


def call(name: str = "roll_dice", args: Any = GOOD_ARGS, index: int = 0) -> ToolCall:
    text = args if isinstance(args, str) else json.dumps(args)
    return ToolCall(index=index, id=f"call_{index}", name=name, arguments=text)


def turn(n: int, **kw: Any) -> Attempt:
    """Attempt n of the tools contract: 1 = the call turn, 2 = the control turn."""
    base: dict[str, Any] = dict(attempt_no=n, ttft_ms=None, text="")
    if n == 1:
        base.update(finish_reason="tool_calls", tool_calls=(call(),))
    else:
        base.update(finish_reason="stop", text="Warm bread and the clatter of pans greet the party.")
    base.update(kw)
    return attempt(Contract.TOOLS, **base)


def judge(*attempts: Attempt) -> Judgement:
    return tools.judge(list(attempts), CFG, schemas=SCHEMAS, expected="roll_dice")
