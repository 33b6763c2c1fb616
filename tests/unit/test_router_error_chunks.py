"""What the router reads of an upstream's own error chunk (router/stream_events.py): its numeric code (a
string, a boolean or a missing code is none) and the one line a failover's detail quotes."""

from __future__ import annotations

from typing import Any

import pytest

from router.stream_events import error_code, error_summary

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("chunk", "code"), [
    ({"error": {"code": 502, "message": "Provider returned error"}}, 502),
    ({"error": {"code": "502"}}, None),
    ({"error": {"code": True}}, None),
    ({"error": {"message": "no code"}}, None),
    ({"error": "a string"}, None),
    ({"choices": []}, None),
    ({}, None),
    (None, None),
])
def test_the_error_code_of_a_chunk(chunk: dict[str, Any] | None, code: int | None) -> None:
    assert error_code(chunk) == code


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
