"""Both probe shells against replies that are not what was asked (tests/support/probe_wire.py plays them): a frame
that is not JSON, invalid UTF-8, an HTML page, no content type, an error object behind a wrong content type, a huge
line, a cut inside a line, lone surrogates, and a reply over the text cap.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tasks.core.classify import is_transport
from tasks.core.contracts import spec_of
from tasks.core.types import Attempt, Contract, ErrorClass, Outcome, Reason
from tests.support.probe_wire import (
    API_KEY,
    CFG,
    DONE,
    SSE_HEAD,
    Step,
    chunk,
    http_response,
    run,
    shell,  # noqa: F401 (autouse: every test on both shells)
    )

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


def protocol_violation(attempt: Attempt) -> str:
    """The attempt is a protocol violation, never transport, and every probed contract fails it."""
    assert attempt.error_class is ErrorClass.PROTOCOL and attempt.http_status == 200, attempt.error_detail
    assert not is_transport(attempt)
    for contract in (Contract.TTFT, Contract.REFUSAL, Contract.STRUCTURED, Contract.LANGUAGE):
        judged = spec_of(contract).judge([replace(attempt, contract=contract)], CFG)
        assert (judged.outcome, judged.reason) == (Outcome.FAIL, Reason.PROTOCOL_VIOLATION), contract
    detail = attempt.error_detail or ""
    assert "\n" not in detail and API_KEY not in detail
    return detail


def test_a_frame_that_is_not_json_is_a_protocol_violation_and_reading_stops() -> None:
    attempt, _, _ = run(
        [SSE_HEAD, chunk("Hello"), b"data: {not json\n\n", chunk(" there", finish="stop"), DONE]
    )
    detail = protocol_violation(attempt)
    assert "data: frame is not JSON: '{not json' (9 bytes); after chunks (1)" in detail
    assert attempt.text == "Hello" and attempt.finish_reason is None


def test_invalid_utf8_never_raises_and_shows_as_replacement_characters() -> None:
    frame = chunk("caf\u00e9 au lait").replace("é".encode(), b"\xc3")
    attempt, _, _ = run([SSE_HEAD, frame, chunk("", finish="stop"), DONE])
    assert attempt.text == "caf\ufffd au lait"
    assert "frame is not valid UTF-8" in protocol_violation(attempt)


@pytest.mark.parametrize(
    ("content_type", "says"),
    [
        ("text/html; charset=utf-8", "content-type (text/html; charset=utf-8) is not an event stream"),
        ("text/plain", "content-type (text/plain) is not an event stream"),
        ("application/json", "application/json body is not a JSON object (over the 81920-byte cap, stopped"),
    ],
)
def test_a_200_html_page_is_a_protocol_violation(content_type: str, says: str) -> None:
    page = b"<!DOCTYPE html>\n<html><title>Just a moment...</title><!-- " + API_KEY.encode() + b" -->"
    page += b"<p>wait</p>" * 10_000 + b"</html>"
    attempt, _, elapsed = run([http_response(200, page, content_type=content_type)])
    detail = protocol_violation(attempt)
    assert says in detail and "'<!DOCTYPE html>\\n<html><title>Just a moment...</title><!-- ***" in detail
    assert "bytes read, the rest not read" in detail
    assert elapsed < 3


def test_a_body_without_content_type_and_without_sse_is_a_protocol_violation() -> None:
    head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
    attempt, _, _ = run([head, b"<html>\n<body>Bad gateway</body>\n</html>\n"])
    assert "HTTP 200 body is not an event stream, first line '<html>' (6 bytes)" in protocol_violation(
        attempt
    )


def test_an_error_object_behind_a_wrong_content_type_is_still_read_as_an_error() -> None:
    body = b'{"error":{"message":"Provider returned error","code":502}}'
    attempt, _, _ = run([http_response(200, body, content_type="text/plain")])
    assert attempt.error_class is ErrorClass.MIDSTREAM_ERROR and attempt.error_code == 502
    assert is_transport(attempt)


def test_a_huge_line_is_given_up_at_the_cap_without_reading_the_rest() -> None:
    piece = b"x" * 65536
    steps: list[Step] = [SSE_HEAD, b'data: {"choices":[{"delta":{"content":"'] + [piece] * 320
    attempt, wire, elapsed = run(steps + [b'"}}]}\n\n', DONE])
    detail = protocol_violation(attempt)
    assert "line over the 1048576-byte cap: stopped reading" in detail
    assert """'data: {"choices":[{"delta":{"content":"xxx""" in detail
    read = int(detail.rsplit("bytes_read (", 1)[1].rstrip(")"))
    assert 1_048_576 < read < 2_000_000 < len(piece) * 320  # the other 19 MB were never read
    assert elapsed < 5


def test_a_cut_inside_a_line_stays_a_stream_cut() -> None:
    attempt, _, _ = run([SSE_HEAD, chunk("Half a"), b'data: {"choices":[{"delta":{"content":" rep'])
    assert attempt.error_class is ErrorClass.STREAM_CUT and is_transport(attempt)


def test_lone_surrogate_escape_is_stored_as_replacement_characters() -> None:
    attempt, _, _ = run([SSE_HEAD, b'data: {"choices":[{"delta":{"content":"a\\ud800b"}}]}\n\n', DONE])
    assert attempt.text.startswith("a") and attempt.text.endswith("b") and "\ufffd" in attempt.text
    attempt.text.encode("utf-8")


def test_a_one_megabyte_reply_is_capped_on_a_character_boundary() -> None:
    piece = "Ж" * 999 + "x"  # 1999 bytes per chunk; 'Ж' is 2 bytes, so a byte cap may land mid-character
    steps: list[Step] = [SSE_HEAD] + [chunk(piece)] * 520 + [chunk("", finish="stop"), DONE]
    cfg = replace(CFG, text_cap_bytes=4097)
    attempt, _, elapsed = run(steps, cfg)
    assert attempt.error_class is None and attempt.finish_reason == "stop"
    assert attempt.text_truncated
    raw = attempt.text.encode("utf-8")
    assert 4095 <= len(raw) <= 4097 and attempt.text.startswith("ЖЖ")
    assert attempt.chunk_count == 521
    assert elapsed < 10
