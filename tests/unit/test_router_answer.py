"""The router's judge of an answer (provider_canary/router/answer.py): golden cases per class, the real captures, what
is no answer at all, and the retry decision. The judges are the canary's own (tools `call_problem`, structured
`judge_attempt`, textscan, opening): these tests pin what live traffic makes of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import provider_canary.router.answer as a
from tasks.core.live_records import LiveQuality

pytestmark = pytest.mark.unit

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openrouter"
INDEX = {c["name"]: c for c in json.loads((CAPTURES / "index.json").read_text(encoding="utf-8"))["captures"]}

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
           "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
JSON_SCHEMA = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}}


def answer(content: str | None = "Hello there.", finish: str | None = "stop", calls: list[tuple[str, str]] = (),
           **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"index": i, "id": f"c{i}", "type": "function",
                                  "function": {"name": n, "arguments": args}} for i, (n, args) in enumerate(calls)]
    choice = {"index": 0, "finish_reason": finish, "native_finish_reason": finish, "message": message}
    return {"id": "gen-1", "object": "chat.completion", "provider": "P", "choices": [choice], **extra}


def checks(doc: dict[str, Any], tools: Any = None, response_format: Any = None) -> dict[str, str]:
    found = a.check(a.read_json(doc), a.expectations(tools, response_format))
    return {str(v.quality): v.reason for v in found}


@pytest.mark.parametrize(("calls", "expected"), [
    ([("get_weather", '{"city": "Paris"}')], "ok"),
    ([("get_time", '{"city": "Paris"}')], "unknown_tool"),
    ([("get_weather", '{"city": "Paris"')], "bad_json_args"),
    ([("get_weather", '["Paris"]')], "bad_json_args"),
    ([("get_weather", '{"town": "Paris"}')], "schema_violation"),
    ([("get_weather", '{"city": 7}')], "schema_violation"),
    ([("get_weather", '{"city": "Paris"}'), ("get_weather", "{}")], "schema_violation"),  # the second call
], ids=["ok", "unknown", "bad-json", "not-object", "missing-key", "wrong-type", "second-call"])
def test_tool_calls_are_judged_against_the_requests_own_tools(calls: list[tuple[str, str]], expected: str) -> None:
    got = checks(answer(None, "tool_calls", calls), TOOLS)
    assert got["tools"] == expected and got["empty"] == "ok" and got["encoding"] == "ok"


def test_a_call_cut_by_the_budget_and_a_request_without_tools_are_not_judged_on_tools() -> None:
    cut = checks(answer(None, "length", [("get_weather", '{"city": "Pa')]), TOOLS)
    assert "tools" not in cut
    assert "tools" not in checks(answer(None, "tool_calls", [("get_weather", "{}")]))  # no tools offered
    assert "tools" not in checks(answer("Sunny.", "stop"), TOOLS)  # no call: the client may not need one


@pytest.mark.parametrize(("content", "response_format", "expected"), [
    ('{"name": "Ana", "age": 40}', JSON_SCHEMA, "ok"),
    ('{"name": "Ana", "age": "40"}', JSON_SCHEMA, "schema_violation"),
    ('{"name": "Ana"}', JSON_SCHEMA, "schema_violation"),
    ('{"name": "Ana", "age": 40', JSON_SCHEMA, "invalid_json"),
    ('Here it is: {"name": "Ana", "age": 40}', JSON_SCHEMA, "invalid_json"),
    ('```json\n{"name": "Ana", "age": 40}\n```', JSON_SCHEMA, "fenced_json"),
    ('{"anything": [1, 2]}', {"type": "json_object"}, "ok"),
    ("{'single': 'quotes'}", {"type": "json_object"}, "invalid_json"),
], ids=["valid", "wrong-type", "missing", "cut", "prose", "fenced", "object-ok", "object-bad"])
def test_structured_output_is_judged_against_the_requests_response_format(
    content: str, response_format: dict[str, Any], expected: str
) -> None:
    assert checks(answer(content), response_format=response_format)["structured"] == expected


def test_structured_json_cut_by_length_is_not_judged_and_text_requests_have_no_structured_class() -> None:
    assert "structured" not in checks(answer('{"name": "An', "length"), response_format=JSON_SCHEMA)
    assert "structured" not in checks(answer('{"name": "Ana"}'))
    assert "structured" not in checks(answer("", "stop"), response_format=JSON_SCHEMA)  # empty: one class says it


@pytest.mark.parametrize(("content", "finish", "expected"), [
    ("", "stop", "empty_reply"),
    (None, "stop", "empty_reply"),
    ("   \n", "stop", "empty_reply"),
    ("Hi.", "stop", "ok"),
    ("", "length", None),  # the budget says why: not judged
    ("", "content_filter", None),
])
def test_an_empty_reply(content: str | None, finish: str, expected: str | None) -> None:
    assert checks(answer(content, finish)).get("empty") == expected


@pytest.mark.parametrize(("content", "expected"), [
    ("A calm reply, in plain words.", "ok"),
    ("CafÃ© au lait, sâ€™il vous plaÃ®t.", "encoding_corruption"),  # UTF-8 read as cp1252
    ("HelloĠworld,ĠhowĠareĠyou?Ċ", "encoding_corruption"),  # byte-level BPE symbols left in
    ("Broken \ufffd bytes", "encoding_corruption"),
    ('",*She smiled.', "corrupted_opening"),
    ("ing *He turned.", "corrupted_opening"),
    ("*She smiled.*", "ok"),
])
def test_encoding(content: str, expected: str) -> None:
    assert checks(answer(content))["encoding"] == expected


def _sse(*contents: bytes, finish: str = "stop") -> bytes:
    def chunk(delta: bytes, reason: str | None = None) -> bytes:
        head = b'data: {"id":"gen-1","object":"chat.completion.chunk","provider":"P","choices":[{"index":0,'
        end = f'"finish_reason":{json.dumps(reason)}}}]}}\n\n'.encode()
        return head + b'"delta":{"content":"' + delta + b'"},' + end
    return b"".join(chunk(c) for c in contents) + chunk(b"", finish) + b"data: [DONE]\n\n"


def test_a_stream_with_a_frame_that_does_not_decode_after_its_first_content_fails_its_encoding() -> None:
    """The relay forwards every event after the commit as it came, and the attempt ended `ok`: the judge is what
    sees the bytes the client got that are not UTF-8 (the probe's `protocol_violation`), so it says so."""
    broken = a.read_stream(_sse(b"*She ", b"glances ", b"\xc3(\xff\xfeat the ", b"window."))
    assert {str(v.quality): v.reason for v in a.check(broken, a.NOTHING_EXPECTED)} == {
        "encoding": "protocol_violation"}
    clean = a.read_stream(_sse(b"*She ", b"glances at the window."))
    assert {str(v.quality): v.reason for v in a.check(clean, a.NOTHING_EXPECTED)} == {"empty": "ok", "encoding": "ok"}
    cut = a.read_stream(_sse(b"*She ", b"\xc3(\xff\xfe"), cut=True)  # kept bytes cut by the router's cap
    assert a.check(cut, a.NOTHING_EXPECTED) != (a.CheckResult(LiveQuality.ENCODING, "protocol_violation"),)


def test_a_structured_reply_is_not_judged_on_its_opening() -> None:
    """JSON opens with what free text must not (a quote then stray punctuation): only free text is judged on
    its opening. Each reply below would fail `corrupted_opening` as free text."""
    quoted = {"type": "json_schema", "json_schema": {"name": "line", "schema": {"type": "string"}}}
    assert checks(answer('".She smiles."'), response_format=quoted) == {"empty": "ok", "structured": "ok",
                                                                          "encoding": "ok"}
    assert checks(answer('",*x"'), response_format={"type": "json_object"})["encoding"] == "ok"
    beside_a_call = answer(". Checking.", "tool_calls", [("get_weather", '{"city": "Paris"}')])
    assert checks(beside_a_call, TOOLS)["encoding"] == "ok"  # text beside a tool call is no free reply
    assert checks(answer('".She smiles."'))["encoding"] == "corrupted_opening"  # as free text it fails


@pytest.mark.parametrize(("doc", "reason"), [
    (json.loads((CAPTURES / "masked-network-error.json").read_text()), "native_network_error"),
    (answer("", "error"), "native_error"),
    (answer("Partial repl", "stop") | {"choices": [{"index": 0, "finish_reason": "stop",
                                                    "native_finish_reason": "upstream_unavailable",
                                                    "message": {"content": "Partial repl"}}]},
     "native_upstream_unavailable"),  # a partial reply does not save it (the probe's rule)
    ({"error": {"code": 502, "message": "Provider returned error"}}, "error_in_200_502"),
    ({"error": {"code": 400, "message": "bad"}}, "error_in_200_400"),
    ({"error": {"message": "no code"}}, "error_in_200_500"),
], ids=["capture", "finish-error", "partial", "error-502", "error-400-no-content", "error-no-code"])
def test_an_answer_that_is_no_answer_fails_over_with_the_upstreams_word(doc: dict[str, Any], reason: str) -> None:
    attempt = a.read_json(doc)
    failure = a.masked_failure(attempt)
    assert failure is not None and str(failure) == reason
    assert a.check(attempt, a.expectations(TOOLS, JSON_SCHEMA)) == ()  # never judged as the model's answer


def test_real_answers_are_answers() -> None:
    for doc in (answer("Hi."), answer(None, "tool_calls", [("get_weather", "{}")]),
                answer("Hi.") | {"error": {"code": 400, "message": "only a warning"}},  # content saves a 4xx
                answer("", "content_filter"),
                {"choices": [{"index": 0, "finish_reason": "error", "native_finish_reason": "MALFORMED_FUNCTION_CALL",
                              "message": {"content": ""}}]}):  # the model's own failure, not the hop's
        assert a.masked_failure(a.read_json(doc)) is None, doc


def stream(name: str) -> a.Attempt:
    return a.read_stream((CAPTURES / name).read_bytes())


@pytest.mark.parametrize("name", ["opencode-openai-tool-call", "opencode-gpt55-tool-call",
                                  "fantasy-glm46-reasoning-tool"])
def test_real_streamed_tool_calls_are_valid_against_their_own_schemas(name: str) -> None:
    capture = INDEX[name]
    tools = [{"type": "function", "function": {"name": n, "parameters": schema}}
             for n, schema in capture["tools"]["schemas"].items()]
    attempt = stream(capture["file"])
    assert [[c.name, c.arguments] for c in attempt.tool_calls] == capture["attempt"]["tool_calls"]
    found = {str(v.quality): v.reason for v in a.check(attempt, a.expectations(tools, None))}
    assert found["tools"] == "ok" and found["empty"] == "ok"
    broken = [{"type": "function", "function": {"name": n, "parameters": {**schema, "required": ["zip"]}}}
              for n, schema in capture["tools"]["schemas"].items()]
    found = {str(v.quality): v.reason for v in a.check(attempt, a.expectations(broken, None))}
    assert found["tools"] == "schema_violation"


def test_the_real_text_stream_is_a_clean_answer_and_the_masked_stream_none() -> None:
    text = stream("opencode-azure-text.sse")
    assert text.text == "Hello!" and {str(v.quality): v.reason for v in a.check(text, a.NOTHING_EXPECTED)} == {
        "empty": "ok", "encoding": "ok"}
    assert a.check(stream("masked-network-error.sse"), a.NOTHING_EXPECTED) == ()


@pytest.mark.parametrize(("checks_", "retried"), [
    ((a.CheckResult(LiveQuality.EMPTY, "ok"), a.CheckResult(LiveQuality.TOOLS, "schema_violation")),
     "schema_violation"),
    ((a.CheckResult(LiveQuality.STRUCTURED, "invalid_json"),), "invalid_json"),
    ((a.CheckResult(LiveQuality.ENCODING, "encoding_corruption"),), None),  # not a tools or structured check
    ((a.CheckResult(LiveQuality.EMPTY, "empty_reply"),), None),  # empty answers have their own rule
    ((a.CheckResult(LiveQuality.TOOLS, "ok"), a.CheckResult(LiveQuality.ENCODING, "ok")), None),
])
def test_the_retry_decision(checks_: tuple[a.CheckResult, ...], retried: str | None) -> None:
    failed = a.failed_check(checks_)
    assert (failed.reason if failed else None) == retried


def test_a_remote_ref_in_a_clients_schema_is_never_fetched() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"$ref": "http://127.0.0.1:9/s.json"}}}]
    with pytest.raises(Exception, match="Unresolvable"):
        a.check(a.read_json(answer(None, "tool_calls", [("f", "{}")])), a.expectations(tools, None))
