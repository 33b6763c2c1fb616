"""The probe's one boundary for httpx exceptions, and what counts as transport (docs/design.md "Vocabulary").

Like httpx's test_httpcore_all_exceptions_mapped: when httpx grows a TransportError subclass, this fails until
TRANSPORT_ERRORS says what it means for an attempt.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from tasks.probe import (
    TRANSPORT_ERRORS,
    classify_exception,
    parse_retry_after,
    probe_attempt_is_transport,
)
from tasks.probe_record import AttemptRecorder
from tasks.sse import BadFrame, Chunk, Comment, Done, FrameProblem
from tasks.types import Attempt, Contract, Endpoint, ErrorClass

MID = ErrorClass.MIDSTREAM_ERROR

pytestmark = pytest.mark.unit


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_every_httpx_transport_error_is_mapped_explicitly() -> None:
    public = {c for c in _subclasses(httpx.TransportError) if c.__module__.startswith("httpx")}
    assert public, "httpx exposes TransportError subclasses"
    missing = sorted(c.__name__ for c in public if c not in TRANSPORT_ERRORS)
    assert missing == []


def test_map_values_are_error_classes_and_keys_are_httpx_errors() -> None:
    for cls, value in TRANSPORT_ERRORS.items():
        assert issubclass(cls, httpx.HTTPError)
        assert isinstance(value, ErrorClass)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (httpx.ConnectTimeout("x"), ErrorClass.CONNECT),  # more specific than TimeoutException
        (httpx.ReadTimeout("x"), ErrorClass.TIMEOUT),
        (httpx.PoolTimeout("x"), ErrorClass.TIMEOUT),
        (httpx.ConnectError("x"), ErrorClass.CONNECT),
        (httpx.ReadError("x"), ErrorClass.STREAM_CUT),
        (httpx.RemoteProtocolError("x"), ErrorClass.STREAM_CUT),
        (httpx.DecodingError("x"), ErrorClass.BAD_FRAME),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_classification_picks_the_most_specific_entry(exc: httpx.HTTPError, expected: ErrorClass) -> None:
    assert classify_exception(exc) is expected


def test_an_unknown_subclass_falls_back_to_its_nearest_mapped_base() -> None:
    class FutureReadTimeout(httpx.ReadTimeout):
        pass

    assert classify_exception(FutureReadTimeout("x")) is ErrorClass.TIMEOUT


def _attempt(**kw: object) -> Attempt:
    base: dict[str, object] = {
        "round_id": "r",
        "model": "m/x",
        "tag": "t",
        "provider_name": "T",
        "contract": Contract.TTFT,
        "attempt_no": 1,
        "started_at": datetime(2026, 11, 1, tzinfo=UTC),
    }
    return Attempt(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "transport"),
    [
        pytest.param({}, False, id="clean"),
        pytest.param({"error_class": ErrorClass.CONNECT}, True, id="connect"),
        pytest.param({"error_class": ErrorClass.TIMEOUT}, True, id="timeout-before-response"),
        pytest.param({"error_class": ErrorClass.TIMEOUT, "http_status": 200}, False, id="200-but-no-text"),
        pytest.param(
            {"error_class": ErrorClass.TIMEOUT, "http_status": 200, "ttft_ms": 8.0}, True, id="stall-mid"
        ),
        pytest.param({"error_class": ErrorClass.STREAM_CUT, "http_status": 200}, True, id="cut"),
        *(
            pytest.param({"error_class": ErrorClass.HTTP_STATUS, "error_code": c}, True, id=f"http-{c}")
            for c in (408, 429, 500, 502, 503, 524, 529)
        ),
        *(
            pytest.param({"error_class": ErrorClass.HTTP_STATUS, "error_code": c}, False, id=f"http-{c}")
            for c in (400, 401, 402, 403, 404)
        ),
        pytest.param({"error_class": MID, "error_code": 502}, True, id="midstream-502"),
        pytest.param({"error_class": MID, "error_code": 429}, True, id="midstream-429"),
        pytest.param({"error_class": MID, "error_code": 400}, False, id="midstream-400"),
        pytest.param({"error_class": MID}, False, id="midstream-no-code"),
        pytest.param({"error_class": ErrorClass.BAD_FRAME, "http_status": 200}, False, id="bad-frame"),
    ],
)
def test_probe_attempt_is_transport(fields: dict[str, object], transport: bool) -> None:
    assert probe_attempt_is_transport(_attempt(**fields)) is transport


NOW = datetime(2026, 11, 1, 10, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("7", 7.0),
        (" 1.5 ", 1.5),
        ("-3", 0.0),
        ("Sun, 01 Nov 2026 10:00:30 GMT", 30.0),
        ("Sun, 01 Nov 2026 09:00:00 GMT", 0.0),
        ("nan", None),
        ("inf", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value, NOW) == seconds


# --- the recorder (pure fold of events into attempt fields) ----------------------------------------------


def _recorded(events: list[object], *, cap: int = 1000, secret: str = "") -> Attempt:
    rec = AttemptRecorder(cap_bytes=cap, t0=100.0, secret=secret)
    for i, event in enumerate(events):
        if rec.on_event(event, 100.0 + i):  # type: ignore[arg-type]
            break
    return rec.to_attempt(
        round_id="r",
        endpoint=Endpoint(model="m/x", tag="t", provider_name="T"),
        contract=Contract.TTFT,
        attempt_no=1,
        started_at=NOW,
        language="en",
        end=100.0 + len(events),
    )


def _text(content: str, **choice: object) -> Chunk:
    delta = {"role": "assistant", "content": content}
    return Chunk({"provider": "T", "choices": [{"delta": delta, **choice}]})


def test_recorder_times_the_first_text_not_comments_or_role_only_chunks() -> None:
    keepalive = Comment(" x")
    a = _recorded([keepalive, _text(""), keepalive, _text("Hi"), _text("", finish_reason="stop"), Done()])
    assert a.ttft_ms == 3000.0 and a.total_ms == 6000.0
    assert (a.keepalive_count, a.chunk_count, a.text, a.finish_reason) == (2, 3, "Hi", "stop")


def test_recorder_stops_at_done() -> None:
    a = _recorded([_text("a"), Done(), _text("b")])
    assert a.text == "a" and a.chunk_count == 1


def test_recorder_first_fault_wins_but_a_bad_frame_yields() -> None:
    bad = BadFrame(FrameProblem.NOT_JSON, "x")
    err = Chunk({"error": {"code": 502, "message": "boom"}})
    a = _recorded([bad, err, Chunk({"error": {"code": 400, "message": "later"}})])
    assert (a.error_class, a.error_code, a.error_detail) == (ErrorClass.MIDSTREAM_ERROR, 502, "boom")
    a = _recorded([err, bad])
    assert a.error_class is ErrorClass.MIDSTREAM_ERROR


def test_recorder_redacts_the_secret_from_details() -> None:
    error = Chunk({"error": {"code": 401, "message": "key topsecret-value rejected"}})
    a = _recorded([error], secret="topsecret-value")
    assert a.error_detail == "key *** rejected"


def test_recorder_caps_text_on_a_character_boundary() -> None:
    a = _recorded([_text("€" * 10)], cap=10)  # 3 bytes each: 3 fit
    assert a.text == "€€€" and a.text_truncated
    a = _recorded([_text("abc"), _text("defg")], cap=7)
    assert a.text == "abcdefg" and not a.text_truncated


def test_recorder_tolerates_odd_usage_and_missing_fields() -> None:
    usage = {"prompt_tokens": True, "completion_tokens": "3", "total_tokens": 5, "cost": float("nan")}
    a = _recorded([Chunk({"usage": usage}), Chunk({"choices": None}), Chunk({})])
    assert (a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.total_tokens, a.usage.cost) == (
        None,
        None,
        5,
        None,
    )
    assert a.served_provider is None and a.chunk_count == 3
