"""One rule for "first content" (tasks/core/wire/chunks.py): the probe's TTFT and the router's commit point read
the same bytes the same way. A refusal-only or a reasoning_details-only delta is the first token for both; a
tool-call delta commits the router but sets no TTFT (docs/design.md "ttft": text, content or reasoning)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from provider_canary.router import stream as gate_fsm
from provider_canary.router.stream import Commit, Gate
from tasks.core.wire.sse import SSEParser
from tasks.probe.recorder import AttemptRecorder

pytestmark = pytest.mark.unit


def event(delta: dict[str, Any]) -> bytes:
    doc = {"id": "gen-1", "object": "chat.completion.chunk", "provider": "P",
           "choices": [{"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": None}]}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


ROLE = event({"content": ""})
CASES = {
    "content": ({"content": "Hi"}, True, True),
    "refusal-only": ({"content": "", "refusal": "I can't help with that."}, True, True),
    "reasoning-only": ({"reasoning": "Let me think"}, True, True),
    "reasoning-content-only": ({"reasoning_content": "hmm"}, True, True),
    "reasoning-details-only": ({"reasoning_details": [{"type": "reasoning.encrypted", "data": "gAAA"}]}, True, True),
    "tool-call-only": ({"content": None, "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]},
                       False, True),
    "empty": ({"content": ""}, False, False),
    "empty-reasoning-details": ({"reasoning_details": []}, False, False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_probes_ttft_and_the_routers_commit_agree(name: str) -> None:
    delta, sets_ttft, commits = CASES[name]
    wire = b": OPENROUTER PROCESSING\n\n" + ROLE + event(delta)

    recorder, parser = AttemptRecorder(cap_bytes=4096, t0=0.0), SSEParser()
    for now, piece in ((1.0, wire[: len(wire) - len(event(delta))]), (2.0, event(delta))):
        for parsed in parser.feed(piece):
            recorder.on_event(parsed, now)
    assert (recorder.ttft_ms == 2000.0) is sets_ttft
    assert recorder.ttft_ms is None or recorder.ttft_ms == 2000.0

    gate, actions = gate_fsm.feed(Gate(), wire)
    committed = [a for a in actions if isinstance(a, Commit)]
    assert bool(committed) is commits
    assert not committed or committed[0].data == wire  # held preamble plus the first content, byte for byte
