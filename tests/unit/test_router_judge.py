"""The router's judge (provider_canary/router/judging.py) on its own: schemas interned (bounded, least recently used
dropped), an answer whose check raises counted and not judged, streamed answers judged off the client's path in slices
through a bounded queue (a full queue drops and counts), nothing queued lost silently at shutdown, and the CPU
it spent per answer. The judge's checks go to the attempt observer, as the live counts read them."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from provider_canary.router import judging
from provider_canary.router.answer import CheckResult, Expectations, read_stream
from provider_canary.router.attempts import AttemptObserver, JudgedAnswer, TierAttempt
from provider_canary.router.metrics import RouterMetrics
from provider_canary.router.routes import Route, Tier
from tasks.core.contracts import structured
from tasks.core.contracts.structured import MAX_VALIDATORS
from tasks.core.live_records import LiveQuality

pytestmark = pytest.mark.unit

ROUTE = Route("model:chat", (Tier("http://a", "m/a"), Tier("http://b", "m/b")), model="chat")
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
           "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]


class Sink:
    def __init__(self) -> None:
        self.answers: list[JudgedAnswer] = []

    def attempt(self, attempt: TierAttempt) -> None:
        pass

    def judged(self, answer: JudgedAnswer) -> None:
        self.answers.append(answer)


class Ticks:
    """A CPU clock that moves one second per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def judge(queue_size: int = 4, clock: Any = None) -> tuple[judging.AnswerJudging, Sink, RouterMetrics]:
    sink, metrics = Sink(), RouterMetrics()
    kw = {"cpu_clock": clock} if clock is not None else {}
    return judging.AnswerJudging(AttemptObserver([sink]), metrics, queue_size, **kw), sink, metrics


def unjudged(metrics: RouterMetrics, reason: str) -> float:
    return metrics.registry.get_sample_value("canary_router_answers_unjudged_total", {"reason": reason}) or 0.0


def sse(*docs: dict[str, Any], done: bool = True) -> bytes:
    out = b"".join(b"data: " + json.dumps(d).encode() + b"\n\n" for d in docs)
    return out + (b"data: [DONE]\n\n" if done else b"")


def delta(content: str | None = None, finish: str | None = None, calls: list[dict[str, Any]] | None = None,
          provider: str = "Alpha") -> dict[str, Any]:
    d: dict[str, Any] = {}
    if content is not None:
        d["content"] = content
    if calls is not None:
        d["tool_calls"] = calls
    return {"id": "g", "provider": provider, "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def streamed(raw: bytes, cut: bool = False, tools: Any = None, response_format: Any = None,
             tier_no: int = 2) -> judging.StreamedAnswer:
    return judging.StreamedAnswer(ROUTE, tier_no, None, read_stream(raw, cut=cut), tools, response_format)


def by_class(found: JudgedAnswer) -> dict[str, str]:
    return {str(v.quality): v.reason for v in found.checks}


async def judged_all(j: judging.AnswerJudging, *answers: judging.StreamedAnswer) -> None:
    task = asyncio.create_task(j.run())
    for answer in answers:
        assert j.later(answer)
    await j.drain(5)
    task.cancel()


# -- schemas --------------------------------------------------------------------------------------------------
def test_one_object_per_distinct_schema_so_its_validator_is_compiled_once() -> None:
    j, _, _ = judge()
    first = j.expectations(copy.deepcopy(TOOLS), None)
    reordered = [{"type": "function", "function": {"name": "get_weather", "parameters": dict(reversed(
        list(copy.deepcopy(WEATHER).items())))}}]
    second = j.expectations(reordered, None)
    assert first.tools is not None and second.tools is not None
    assert first.tools["get_weather"] is second.tools["get_weather"]  # the same schema, keys in another order
    assert structured._validator(first.tools["get_weather"]) is structured._validator(second.tools["get_weather"])
    other = j.expectations([{"function": {"name": "get_weather", "parameters": {"type": "object"}}}], None)
    assert other.tools is not None and other.tools["get_weather"] is not first.tools["get_weather"]
    fmt = {"type": "json_schema", "json_schema": {"name": "w", "schema": copy.deepcopy(WEATHER)}}
    assert j.expectations(None, fmt).schema is first.tools["get_weather"]  # response formats share them


def test_the_interned_schemas_are_bounded_and_the_least_recently_used_goes_first() -> None:
    j, _, _ = judge()
    schemas = [{"type": "object", "title": f"s{n}"} for n in range(MAX_VALIDATORS + 1)]
    kept = [j.intern(s) for s in schemas[:MAX_VALIDATORS]]
    assert kept == schemas[:MAX_VALIDATORS] and all(k is s for k, s in zip(kept, schemas, strict=False))
    assert j.intern(dict(schemas[0])) is schemas[0]  # used again: now the most recent
    j.intern(schemas[MAX_VALIDATORS])  # one too many: the least recently used (s1) goes
    assert len(j._schemas) == MAX_VALIDATORS
    assert j.intern(dict(schemas[0])) is schemas[0] and j.intern(dict(schemas[2])) is schemas[2]
    again = dict(schemas[1])
    assert j.intern(again) is again  # s1 was dropped: its copy is the new one


# -- judging ----------------------------------------------------------------------------------------------
def test_a_check_that_raises_is_counted_and_gives_no_check_result() -> None:
    from provider_canary.router.answer import expectations, read_json

    j, sink, metrics = judge()
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"$ref": "http://127.0.0.1:9/s.json"}}}]
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    doc = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"tool_calls": [call]}}]}
    assert j.checks(read_json(doc), expectations(tools, None)) == ()
    assert (j.errors, j.judged, unjudged(metrics, "error")) == (1, 0, 1.0)
    fine = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "Hello."}}]}
    assert j.checks(read_json(fine), Expectations()) == (CheckResult(LiveQuality.EMPTY, "ok"),
                                                           CheckResult(LiveQuality.ENCODING, "ok"))
    assert (j.errors, j.judged) == (1, 1)
    j.record(ROUTE, 1, "Alpha", ())
    assert sink.answers == []  # nothing judged, nothing counted


def test_a_streamed_answer_folded_by_the_relay_is_judged_whole() -> None:
    j, sink, metrics = judge(clock=Ticks())
    words = "All is well here. " * 3000
    raw = sse(delta("Hi. "), *(delta(words[i:i + 5000]) for i in range(0, len(words), 5000)), delta(finish="stop"))
    asyncio.run(judged_all(j, streamed(raw)))
    [found] = sink.answers
    assert (found.route, found.tier_no, found.provider) == (ROUTE, 2, "Alpha")  # the provider the chunks named
    assert by_class(found) == {"empty": "ok", "encoding": "ok"}
    # one tick for the request's expectations, one for the checks: the CPU the judge spent, and per answer
    assert (j.judged, j.errors, j.dropped) == (1, 0, 0) and j.cpu_s == 2
    assert j.health() == {"queued": 0, "judged": 1, "dropped": 0, "errors": 0, "cpu_ms_per_answer": 2000.0}
    assert unjudged(metrics, "error") == unjudged(metrics, "queue_full") == 0


def test_a_stream_without_its_end_is_judged_whole_and_a_cut_one_only_on_what_was_kept() -> None:
    j, sink, _ = judge()
    call = [{"index": 0, "id": "c", "type": "function", "function": {"name": "get_weather",
                                                                   "arguments": '{"city": "Lis'}}]
    last_event_unterminated = sse(delta("Hello"), done=False) + b'data: {"choices": [{"delta": {"content": " x"}}]}'
    answers = [
        streamed(sse(delta(calls=call)), cut=True, tools=TOOLS),  # the router kept only this much: not judged
        streamed(sse(delta(calls=call), delta(finish="tool_calls")), tools=TOOLS),  # broken arguments
        streamed(last_event_unterminated, tier_no=1),
    ]
    asyncio.run(judged_all(j, *answers))
    cut, broken, whole = sink.answers
    assert "tools" not in by_class(cut) and by_class(broken)["tools"] == "bad_json_args"
    assert whole.tier_no == 1 and by_class(whole) == {"empty": "ok", "encoding": "ok"}


def test_a_clients_schema_too_deep_to_read_still_gets_the_other_checks() -> None:
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"type": "object", "properties": {"x": deep}}
    tools = [{"type": "function", "function": {"name": "f", "parameters": deep}}]
    j, sink, _ = judge()
    asyncio.run(judged_all(j, streamed(sse(delta("Fine."), delta(finish="stop")), tools=tools)))
    assert by_class(sink.answers[0]) == {"empty": "ok", "encoding": "ok"} and j.errors == 0


def test_an_answer_the_judge_cannot_read_is_counted_and_the_next_one_is_judged() -> None:
    j, sink, metrics = judge()
    bad = judging.StreamedAnswer(ROUTE, 1, None, "not an answer", None, None)  # type: ignore[arg-type]
    asyncio.run(judged_all(j, bad, streamed(sse(delta("Fine."), delta(finish="stop")))))
    assert (j.errors, unjudged(metrics, "error"), len(sink.answers)) == (1, 1.0, 1)


# -- the queue ---------------------------------------------------------------------------------------------
def test_a_full_queue_drops_the_answer_and_counts_it() -> None:
    j, _, metrics = judge(queue_size=1)

    async def go() -> list[bool]:
        return [j.later(streamed(b"")), j.later(streamed(b"")), j.later(streamed(b""))]

    assert asyncio.run(go()) == [True, False, False]
    assert (j.dropped, unjudged(metrics, "queue_full"), j.health()["queued"]) == (2, 2.0, 1)


def test_what_is_still_queued_at_shutdown_is_counted_as_dropped() -> None:
    j, sink, metrics = judge(queue_size=3)

    async def go() -> None:
        for _ in range(3):
            j.later(streamed(sse(delta("Fine."), delta(finish="stop"))))
        await j.drain(0.01)  # nobody judges: all three are left

    asyncio.run(go())
    assert (j.dropped, unjudged(metrics, "queue_full"), sink.answers) == (3, 3.0, [])
    j2, sink2, metrics2 = judge(queue_size=3)
    asyncio.run(judged_all(j2, *(streamed(sse(delta("Fine."), delta(finish="stop"))) for _ in range(3))))
    assert (j2.dropped, unjudged(metrics2, "queue_full"), len(sink2.answers)) == (0, 0.0, 3)


def test_health_before_any_answer() -> None:
    j, _, _ = judge()
    assert j.health() == {"queued": 0, "judged": 0, "dropped": 0, "errors": 0, "cpu_ms_per_answer": 0.0}
