"""The router's judge (provider_canary/router/judging.py): what it counts over several answers (errors, drops, CPU per
answer), that a streamed answer is judged on the request's response format and on its last event, and that
judging a long answer yields to the event loop without waiting on it."""

from __future__ import annotations

import asyncio
import time

import pytest

from provider_canary.router import judging
from tests.unit.test_router_judge import by_class, delta, judge, judged_all, sse, streamed, unjudged

pytestmark = pytest.mark.unit

PERSON = {"type": "json_schema", "json_schema": {"name": "p", "schema": {
    "type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}}}


class Steps:
    """A CPU clock that moves `step` seconds per reading."""

    def __init__(self, step: float) -> None:
        self.step, self.now = step, 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_every_failure_and_every_drop_is_counted() -> None:
    j, sink, metrics = judge(queue_size=2)
    bad = judging.StreamedAnswer(streamed(b"").route, 1, None, "not an answer", None, None)  # type: ignore[arg-type]

    async def go() -> None:
        await judged_all(j, bad, bad)
        for _ in range(3):  # nobody judges any more: the third finds the queue full
            j.later(streamed(sse(delta("Fine."), delta(finish="stop"))))
        await j.drain(0.01)  # the two queued are left at shutdown

    asyncio.run(go())
    assert (j.errors, unjudged(metrics, "error"), sink.answers) == (2, 2.0, [])
    assert (j.dropped, unjudged(metrics, "queue_full")) == (3, 3.0)


def test_the_cpu_per_answer_is_the_total_over_the_answers_judged() -> None:
    j, _, _ = judge(clock=Steps(0.00012345678))
    answer = sse(delta("Fine."), delta(finish="stop"))
    asyncio.run(judged_all(j, streamed(answer), streamed(answer)))
    assert j.judged == 2
    # two readings around the request's expectations and two around the checks, for each of the two answers
    assert j.cpu_s == pytest.approx(4 * 0.00012345678)
    per_answer_ms = j.cpu_s / 2 * 1000
    assert j.health()["cpu_ms_per_answer"] == round(per_answer_ms, 3) != round(per_answer_ms, 4)


def test_a_streamed_answer_is_judged_on_the_response_format_it_was_asked_for() -> None:
    j, sink, _ = judge()
    asyncio.run(judged_all(j, streamed(sse(delta('{"age": "forty"}'), delta(finish="stop")),
                                       response_format=PERSON)))
    assert by_class(sink.answers[0])["structured"] == "schema_violation"


def test_a_last_event_without_its_blank_line_is_judged_when_the_stream_was_whole() -> None:
    j, sink, _ = judge()
    last = sse(delta("Hello there.", finish="stop"), done=False).rstrip(b"\n")  # the upstream closed after it
    asyncio.run(judged_all(j, streamed(last)))
    assert by_class(sink.answers[0]) == {"empty": "ok", "encoding": "ok"}  # not an empty answer


def test_judging_long_answers_never_waits_on_the_event_loop() -> None:
    j, sink, _ = judge()
    words = "All is well here. " * 4000
    raw = sse(*(delta(words[i:i + 5000]) for i in range(0, len(words), 5000)), delta(finish="stop"))

    async def go() -> float:
        started = time.monotonic()
        await asyncio.wait_for(judged_all(j, *(streamed(raw) for _ in range(4))), timeout=30)
        return time.monotonic() - started

    took = asyncio.run(go())
    assert len(sink.answers) == 4 and took < 2.0  # milliseconds of work; a second's sleep per answer would be 4+


def test_every_answer_whose_check_raises_is_counted() -> None:
    from provider_canary.router.answer import expectations, read_json

    j, _, metrics = judge()
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"$ref": "http://127.0.0.1:9/s.json"}}}]
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    doc = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"tool_calls": [call]}}]}
    for _ in range(2):
        assert j.checks(read_json(doc), expectations(tools, None)) == ()
    assert (j.errors, unjudged(metrics, "error")) == (2, 2.0)
