"""What the router reads of an upstream's own error chunk (provider_canary/router/stream_events.py,
tasks/core/wire/chunks.py): its numeric code (an integer or a digit string, as the probe reads it; a word, a boolean or
a missing code is none) and the one line a failover's detail quotes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from provider_canary.router import stream as g
from provider_canary.router.stream_events import error_code, error_summary
from tasks.core.wire.sse import SSEParser
from tasks.probe.recorder import AttemptRecorder

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("chunk", "code"), [
    ({"error": {"code": 502, "message": "Provider returned error"}}, 502),
    ({"error": {"code": "502"}}, 502),
    ({"error": {"code": "rate_limit_exceeded"}}, None),
    ({"error": {"code": True}}, None),
    ({"error": {"message": "no code"}}, None),
    ({"error": "a string"}, None),
    ({"choices": []}, None),
    ({}, None),
    (None, None),
])
def test_the_error_code_of_a_chunk(chunk: dict[str, Any] | None, code: int | None) -> None:
    assert error_code(chunk) == code


@pytest.mark.parametrize("code", [429, "429"], ids=["integer", "digit-string"])
def test_an_error_chunk_before_the_commit_fails_over_with_its_code_as_the_probe_reads_it(code: object) -> None:
    """The probe reads a digit-string code as the number (tasks/core/wire/chunks.py `chunk_error`); the gate too."""
    event = b'data: ' + json.dumps({"error": {"code": code, "message": "Rate limited"}}).encode() + b"\n\n"
    _, actions = g.feed(g.Gate(), event)
    assert isinstance(actions[0], g.FailOver) and actions[0].reason.word == "429"
    recorder = AttemptRecorder(cap_bytes=1000, t0=0.0)
    for parsed in SSEParser().feed(event):
        recorder.on_event(parsed, 0.0)
    assert recorder.error_code == 429


@pytest.mark.parametrize(("chunk", "summary"), [
    ({"error": {"code": 429, "message": "Rate limited upstream"}}, "429: Rate limited upstream"),
    ({"error": {"code": 500, "message": "x" * 200}}, "500: " + "x" * 120),
    ({"error": {"code": 503}}, "503: "),
    ({"error": {"message": "no code"}}, "None: no code"),
    ({"error": "a string"}, "finish_reason error"),
    ({"choices": [{"finish_reason": "error"}]}, "finish_reason error"),
    (None, "finish_reason error"),
])
def test_the_one_line_summary_of_an_error_chunk(chunk: dict[str, Any] | None, summary: str) -> None:
    assert error_summary(chunk) == summary
