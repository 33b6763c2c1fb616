"""What a client and the live counts see of answers that an audit's mutations showed no test pinned down
(issue 43), through the real router and the official `openai` client: an error object in a non-streamed 200
with partial text, the ends of a committed stream (cut, one chunk without [DONE], the upstream's own error),
answers whose only output is a refusal or reasoning details, and the answers the judge must not fail (tool
arguments cut by the budget or by the router's cap, tool-call answers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_router_answers import MESSAGES, TOOLS, client, events, live, router_for
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def sse(*docs: dict[str, Any], done: bool = True) -> bytes:
    out = b"".join(b"data: " + json.dumps(d).encode() + b"\n\n" for d in docs)
    return out + (b"data: [DONE]\n\n" if done else b"")


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    return {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "provider": "Alpha",
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish, "native_finish_reason": finish}],
            **top}


def stream_of(*docs: dict[str, Any], done: bool = True) -> Script:
    return Script("raw", body=sse(*docs, done=done), status=200)


def raw_stream(r: Any, **extra: Any) -> list[dict[str, Any]]:
    """Every chunk the client got, as JSON (the error chunk too, which the SDK would raise on)."""
    with client(r).chat.completions.with_streaming_response.create(model="chat", messages=MESSAGES, stream=True,
                                                                   **extra) as resp:
        return [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: {")]


def test_a_non_streamed_200_with_a_5xx_error_object_and_partial_text_is_answered_by_the_next_tier(
        tmp_path: Path) -> None:
    partial = {"id": "gen-1", "object": "chat.completion", "provider": "Alpha",
               "error": {"code": 502, "message": "Upstream error: connection reset"},
               "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                                                                             "content": "The weather in Par"}}]}
    scripts = {"t1": Script("raw", status=200, body=json.dumps(partial).encode(), content_type="application/json"),
               "t2": Script("ok", text="Sunny in Paris.")}
    with FakeUpstream(scripts) as up, router_for(up, tmp_path) as r:
        reply = client(r).chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
    assert reply.parse().choices[0].message.content == "Sunny in Paris." and reply.headers["x-canary-tier"] == "2"
    assert events(tmp_path) == [(1, "error_in_200_502")]
    assert ("upstream_error", 1) in {(row[2], row[0]) for row in live(tmp_path)}


def test_a_non_streamed_200_with_a_client_error_object_and_text_is_the_answer(tmp_path: Path) -> None:
    """An error code that is not one to try again, beside content: the content is the answer
    (provider_canary/router/ROUTES.md)."""
    doc = {"id": "gen-1", "object": "chat.completion", "provider": "Alpha", "error": {"code": 400, "message": "x"},
           "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello."}}]}
    scripts = {"t1": Script("raw", status=200, body=json.dumps(doc).encode(), content_type="application/json"),
               "t2": Script("ok", text="Tier two.")}
    with FakeUpstream(scripts) as up, router_for(up, tmp_path) as r:
        reply = client(r).chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
    assert reply.headers["x-canary-tier"] == "1" and events(tmp_path) == []


def test_a_stream_cut_after_its_first_chunk_counts_against_the_endpoint(tmp_path: Path) -> None:
    with FakeUpstream({"t1": Script("die_after_first"), "t2": Script("ok")}) as up, router_for(up, tmp_path) as r:
        got = raw_stream(r)
    assert [c["error"]["metadata"]["router_reason"] for c in got if "error" in c] == ["stream_error_after_commit"]
    assert {(row[0], row[2]) for row in live(tmp_path)} == {(1, "cut_stream")}  # never `ok`


def test_one_chunk_with_its_finish_and_no_done_is_a_whole_answer(tmp_path: Path) -> None:
    one = stream_of(chunk({"role": "assistant", "content": "All of it."}, "stop"), done=False)
    with FakeUpstream({"t1": one, "t2": Script("ok")}) as up, router_for(up, tmp_path) as r:
        got = raw_stream(r)
    assert [c["choices"][0]["delta"].get("content") for c in got] == ["All of it."]  # no error chunk after it
    assert {(row[0], row[2]) for row in live(tmp_path) if row[3] is None} == {(1, "ok")}


def test_the_upstreams_own_error_after_the_first_chunk_reaches_the_client_once(tmp_path: Path) -> None:
    own = {"code": 502, "message": "Provider disconnected"}
    body = stream_of(chunk({"role": "assistant", "content": "Part"}),
                     chunk({"content": ""}, "error", error=own), done=False)  # then the connection ends
    with FakeUpstream({"t1": body, "t2": Script("ok")}) as up, router_for(up, tmp_path) as r:
        got = raw_stream(r)
    assert [c["error"] for c in got if "error" in c] == [own]  # the router adds no second error chunk
    assert {(row[0], row[2], row[4]) for row in live(tmp_path) if row[3] is None} == {(1, "upstream_error", "502")}


@pytest.mark.parametrize("delta", [
    {"role": "assistant", "refusal": "I can't help with that."},
    {"role": "assistant", "reasoning_details": [{"type": "reasoning.encrypted", "data": "b64"}]},
], ids=["refusal", "reasoning-details"])
def test_an_answer_whose_only_output_is_a_refusal_or_reasoning_details_is_an_answer_not_an_empty_one(
        tmp_path: Path, delta: dict[str, Any]) -> None:
    """Such a delta is output: the commit point. Were it not, the finish after it would be an empty answer
    and the router would ask tier 2."""
    body = stream_of(chunk(delta), chunk({}, "stop"))
    with FakeUpstream({"t1": body, "t2": Script("ok", text="Tier two.")}) as up, router_for(up, tmp_path) as r:
        got = raw_stream(r)
    assert got[0]["choices"][0]["delta"] == delta and events(tmp_path) == [] and not up.for_model("t2")


@pytest.mark.parametrize(("script", "settings"), [
    (stream_of(chunk({"tool_calls": [{"index": 0, "id": "c", "type": "function",
                                      "function": {"name": "get_weather", "arguments": '{"city": "Pa'}}]}),
               chunk({}, "length")), {}),  # cut by the client's max_tokens
    (Script("tool_call", arguments=json.dumps({"city": "Paris " * 400})), {"judge_keep_bytes": 1024}),  # the cap
], ids=["cut-by-length", "cut-by-the-cap"])
def test_tool_arguments_cut_short_are_not_judged_broken(tmp_path: Path, script: Script,
                                                        settings: dict[str, Any]) -> None:
    with FakeUpstream({"t1": script, "t2": Script("ok")}) as up, router_for(up, tmp_path, **settings) as r:
        raw_stream(r, tools=TOOLS)
    judged = {(row[3], row[4]) for row in live(tmp_path) if row[3] is not None}
    assert ("tools", "bad_json_args") not in judged and ("empty", "ok") in judged


def test_a_tool_call_answer_is_not_judged_as_structured_output(tmp_path: Path) -> None:
    """Words beside a tool call are no JSON reply, even when the request asked for one."""
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "get_weather",
                                                                     "arguments": '{"city": "Paris"}'}}
    body = stream_of(chunk({"role": "assistant", "content": "Let me check."}), chunk({"tool_calls": [call]}),
                     chunk({}, "tool_calls"))
    with FakeUpstream({"t1": body, "t2": Script("ok")}) as up, router_for(up, tmp_path) as r:
        raw_stream(r, tools=TOOLS, response_format={"type": "json_object"})
    judged = {(row[3], row[4]) for row in live(tmp_path) if row[3] is not None}
    assert judged == {("empty", "ok"), ("tools", "ok"), ("encoding", "ok")}  # no structured verdict


def test_the_official_client_reads_the_refusal(tmp_path: Path) -> None:
    body = stream_of(chunk({"role": "assistant", "refusal": "I can't help with that."}), chunk({}, "stop"))
    with FakeUpstream({"t1": body}) as up, router_for(up, tmp_path, models=("t1",)) as r:
        refusals = [c.choices[0].delta.refusal for c in client(r).chat.completions.create(
            model="chat", messages=MESSAGES, stream=True) if c.choices]  # type: ignore[arg-type,call-overload]
    assert "I can't help with that." in refusals
