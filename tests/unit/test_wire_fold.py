"""One fold from the wire to a record (tasks/core/wire/fold.py): the probe's `AttemptRecorder` and the router's
`AnswerReader` read the same real streams into the same text, tool calls, finish reasons, provider, error code
and chunk count; a refusal is the answer's text for both (an answer, not an empty reply)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import provider_canary.router.answer as answer
from tasks.core.live_records import LiveQuality
from tasks.core.types import Endpoint, Reason
from tasks.core.wire.sse import SSEParser
from tasks.probe.recorder import AttemptRecorder

pytestmark = pytest.mark.unit
CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openrouter"


def probe_fold(raw: bytes) -> AttemptRecorder:
    recorder, parser = AttemptRecorder(cap_bytes=256 * 1024, t0=0.0), SSEParser()
    for event in parser.feed(raw) + parser.close():
        if recorder.on_event(event, 1.0):
            break
    return recorder


@pytest.mark.parametrize("name", sorted(p.name for p in CAPTURES.glob("*.sse")))
def test_the_probe_and_the_router_fold_a_real_stream_alike(name: str) -> None:
    raw = (CAPTURES / name).read_bytes()
    probe, router = probe_fold(raw), answer.read_stream(raw)
    assert router.chunk_count > 0
    assert (probe.chunk_count, probe.finish_reason, probe.native_finish_reason, probe.provider, probe.error_code) == (
        router.chunk_count, router.finish_reason, router.native_finish_reason, router.served_provider,
        router.error_code)
    probed = probe.to_attempt(round_id="r", endpoint=Endpoint("m/x", "p/fp8", "P"), contract="ttft", attempt_no=1,
                              started_at=router.started_at, language="en", end=2.0)
    assert (probed.text, probed.tool_calls) == (router.text, router.tool_calls)


def test_a_refusal_is_the_answers_text_for_the_probe_and_the_router() -> None:
    def event(delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": finish}
        doc = {"provider": "P", "choices": [choice]}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    raw = event({"content": ""}) + event({"refusal": "I can't help with that."}) + event({}, "stop")
    probe, router = probe_fold(raw), answer.read_stream(raw)
    assert probe.ttft_ms == 1000.0
    assert router.text == "I can't help with that." and not answer.is_empty(router)
    assert answer.check(router, answer.NOTHING_EXPECTED)[0] == answer.CheckResult(LiveQuality.EMPTY, Reason.OK)


def test_the_fold_keeps_reasoning_apart_and_has_blank_usage_until_a_chunk_brings_one() -> None:
    from tasks.core.round_records import Usage
    from tasks.core.wire.fold import ChunkFold

    fold = ChunkFold(cap_bytes=1024)
    delta = {"reasoning": "Let me think. ", "content": "Hi."}
    assert fold.add({"choices": [{"index": 0, "delta": delta}]}) is None
    assert fold.add({"choices": [{"index": 0, "delta": {"reasoning_content": "Done."}}]}) is None
    assert (fold.text.value(), fold.reasoning.value()) == ("Hi.", "Let me think. Done.")
    assert fold.usage == Usage()  # no chunk named a usage: every count unknown, not a missing record
    fold.add({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
    fold.add({"choices": [{"index": 0, "delta": {"content": "!"}}]})  # a later chunk without usage keeps it
    assert (fold.usage.prompt_tokens, fold.usage.completion_tokens, fold.chunk_count) == (3, 2, 4)
