"""Tool-call deltas assembled by index (tasks/core/wire/tools.py + tasks/probe/recorder.py), from OpenRouter's bytes.

RECORDED is the verbatim tool-call stream of docs/openrouter-api.md 3c [REC-OC openrouter-streams-tool-call]
(openai/gpt-4o-mini, forced tool_choice), usage chunk shortened.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from typing import Any

import pytest

from tasks.core.plan import attempts_for, plan_probes, supports
from tasks.core.types import Attempt, Contract, Endpoint, ToolCall
from tasks.core.wire.sse import SSEParser
from tasks.core.wire.tools import delta_tool_calls
from tasks.probe.recorder import AttemptRecorder

pytestmark = pytest.mark.unit

_HEAD = (
    '{"id":"gen-1778031306-HYzOq04JIk1hZQ4iaNjD","object":"chat.completion.chunk","created":1778031306,'
    '"model":"openai/gpt-4o-mini","provider":"OpenAI","system_fingerprint":"fp_b6580bbee1","choices":[{"index":0,'
)


def _frame(delta: str, finish: str = "null", native: str = "null", tail: str = "") -> str:
    choice_tail = f'"finish_reason":{finish},"native_finish_reason":{native}}}]'
    return f'data: {_HEAD}"delta":{delta},{choice_tail}{tail}}}\n\n'


def _args(piece: str) -> str:
    entry = json.dumps({"index": 0, "function": {"arguments": piece}}, separators=(",", ":"))
    return _frame('{"content":null,"role":"assistant","tool_calls":[' + entry + "]}")


RECORDED = (
    ": OPENROUTER PROCESSING\n\n"
    + _frame(
        '{"content":null,"role":"assistant","tool_calls":[{"index":0,"id":"call_L7mHMq49ZSUTBHjLJfBIP2eT",'
        '"type":"function","function":{"name":"get_weather","arguments":""}}]}'
    )
    + "".join(_args(p) for p in ("", '{"', "city", '":"', "Paris", '"}'))
    + _frame('{"content":"","role":"assistant"}', '"tool_calls"', '"stop"')
    + _frame(
        '{"content":"","role":"assistant"}',
        '"tool_calls"',
        '"stop"',
        ',"usage":{"prompt_tokens":67,"completion_tokens":5,"total_tokens":72,"cost":0.00001305}',
    )
    + "data: [DONE]\n\n"
).encode()


def record(parts: list[bytes], cap: int = 16 * 1024) -> Attempt:
    rec = AttemptRecorder(cap_bytes=cap, t0=0.0)
    parser = SSEParser()
    for i, part in enumerate(parts):
        for event in parser.feed(part):
            rec.on_event(event, 0.01 * (i + 1))
    for event in parser.close():
        rec.on_event(event, 1.0)
    rec.http_status = 200
    return to_attempt(rec)


def to_attempt(rec: AttemptRecorder) -> Attempt:
    ep = Endpoint("openai/gpt-4o-mini", "openai", "OpenAI")
    return rec.to_attempt(
        round_id="r",
        endpoint=ep,
        contract=Contract.TOOLS,
        attempt_no=1,
        started_at=datetime(2026, 11, 1, tzinfo=UTC),
        language="en",
        end=1.0,
    )


EXPECTED = (ToolCall(0, "call_L7mHMq49ZSUTBHjLJfBIP2eT", "get_weather", '{"city":"Paris"}'),)


def test_the_recorded_openrouter_stream_assembles_into_one_call() -> None:
    a = record([RECORDED])
    assert a.tool_calls == EXPECTED
    assert (a.finish_reason, a.native_finish_reason) == ("tool_calls", "stop")
    assert a.text == "" and a.ttft_ms is None  # a tool-call delta is not a first token
    assert a.usage.completion_tokens == 5 and a.error_class is None


@pytest.mark.parametrize("seed", range(8))
def test_any_byte_split_gives_the_same_call(seed: int) -> None:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(RECORDED)), 40))
    parts = [RECORDED[a:b] for a, b in zip([0, *cuts], [*cuts, len(RECORDED)], strict=True)]
    assert record(parts).tool_calls == EXPECTED


def chunk_with(calls: list[dict[str, Any]], key: str = "delta") -> dict[str, Any]:
    return {"choices": [{"index": 0, key: {"content": None, "tool_calls": calls}}]}


def test_interleaved_calls_are_assembled_by_index_not_by_arrival() -> None:
    rec = AttemptRecorder(cap_bytes=1024, t0=0.0)
    for calls in (
        [{"index": 1, "id": "b", "type": "function", "function": {"name": "lookup_rule", "arguments": ""}}],
        [{"index": 0, "id": "a", "type": "function", "function": {"name": "roll_dice", "arguments": '{"x"'}}],
        [{"index": 1, "function": {"arguments": '{"topic":'}}],
        [{"index": 0, "function": {"arguments": ":1}"}}],
        [{"index": 1, "function": {"arguments": '"falling"}'}}],
    ):
        rec.on_chunk(chunk_with(calls), 0.1)
    assert to_attempt(rec).tool_calls == (
        ToolCall(0, "a", "roll_dice", '{"x":1}'),
        ToolCall(1, "b", "lookup_rule", '{"topic":"falling"}'),
    )


def test_a_non_streamed_message_and_its_quirks() -> None:
    body = chunk_with(
        [
            {"id": "c1", "type": "function", "function": {"name": "roll_dice", "arguments": '{"a":1}'}},
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "lookup_rule", "arguments": {"topic": "x"}},
            },
            {"index": True, "function": {"name": "z", "arguments": None}},
            "garbage",
        ],
        key="message",
    )
    frags = delta_tool_calls(body)
    assert [(f.index, f.id, f.name, f.arguments) for f in frags] == [
        (0, "c1", "roll_dice", '{"a":1}'),
        (1, "c2", "lookup_rule", '{"topic":"x"}'),  # an object instead of a string, kept as compact JSON
        (2, None, "z", ""),  # a boolean is not an index: position
    ]
    assert delta_tool_calls({"choices": [{"delta": {"content": "hi"}}]}) == []
    assert delta_tool_calls({"choices": "x"}) == []


def test_arguments_share_the_text_cap_and_flag_the_cut() -> None:
    rec = AttemptRecorder(cap_bytes=8, t0=0.0)
    rec.on_chunk(
        chunk_with([{"index": 0, "id": "a", "function": {"name": "n", "arguments": '{"abcdefgh":1}'}}]), 0.1
    )
    a = to_attempt(rec)
    assert a.tool_calls[0].arguments == '{"abcdef' and a.text_truncated


def test_a_later_name_or_id_does_not_overwrite_the_first() -> None:
    rec = AttemptRecorder(cap_bytes=1024, t0=0.0)
    rec.on_chunk(
        chunk_with([{"index": 0, "id": "a", "function": {"name": "roll_dice", "arguments": "{"}}]), 0.1
    )
    rec.on_chunk(chunk_with([{"index": 0, "id": "b", "function": {"name": "other", "arguments": "}"}}]), 0.2)
    assert to_attempt(rec).tool_calls == (ToolCall(0, "a", "roll_dice", "{}"),)


def test_tools_are_planned_only_where_the_endpoint_lists_them() -> None:
    with_tools = Endpoint("m", "a", "A", supported_parameters=("max_tokens", "tools"))
    without = Endpoint("m", "b", "B", supported_parameters=("max_tokens", "tool_choice"))
    probes = plan_probes([without, with_tools], ["en"], {})
    assert [(p.endpoint.tag, str(p.contract)) for p in probes if p.contract is Contract.TOOLS] == [
        ("a", "tools")
    ]
    assert {str(p.contract) for p in probes if p.endpoint.tag == "b"} == {
        "ttft",
        "refusal",
        "structured",
        "language",
    }
    assert supports(without, Contract.TTFT) and not supports(without, Contract.TOOLS)
    assert attempts_for(Contract.TOOLS) == (1, 2) and attempts_for(Contract.LANGUAGE) == (1,)
