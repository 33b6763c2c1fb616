"""The one home of transport vs quality (tasks/core/classify.py) and the probe's recorder.

The wire rules it rests on (status classes, Retry-After, the httpx exception map) are tested in
tests/unit/test_wire_rules.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.config import CanaryConfig
from tasks.core.classify import ERROR_OUTCOMES, exchange_judgement, is_transport
from tasks.core.contracts import probed, spec_of
from tasks.core.judge import judge_round
from tasks.core.types import Attempt, Contract, Endpoint, ErrorClass, Outcome, Reason
from tasks.core.wire.sse import BadFrame, Chunk, Comment, Done, FrameProblem, SSEParser
from tasks.probe.recorder import AttemptRecorder

MID = ErrorClass.MIDSTREAM_ERROR

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 1, 10, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("ec", list(ErrorClass))
def test_every_error_class_is_judged_as_its_outcome_rule_says(ec: ErrorClass) -> None:
    """`ERROR_OUTCOMES` is what `exchange_judgement` does with each wire fault: a fixed outcome, or (None) one
    the code decides, a code to try again being transport and any other inconclusive."""
    assert set(ERROR_OUTCOMES) == set(ErrorClass)
    rule = ERROR_OUTCOMES[ec]
    for code in (503, 400):
        judged = exchange_judgement(_attempt(error_class=ec, error_code=code, http_status=200))
        assert judged is not None
        expected = rule or (Outcome.TRANSPORT if code == 503 else Outcome.INCONCLUSIVE)
        assert judged.outcome is expected, (ec, code)


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
    ("fields", "outcome", "reason"),
    [
        pytest.param({"http_status": 200}, None, None, id="clean"),
        pytest.param({"error_class": ErrorClass.CONNECT}, Outcome.TRANSPORT, "connect", id="connect"),
        pytest.param({"error_class": ErrorClass.TIMEOUT}, Outcome.TRANSPORT, "timeout", id="timeout-before"),
        pytest.param(
            {"error_class": ErrorClass.TIMEOUT, "http_status": 200, "ttft_ms": 8.0},
            Outcome.TRANSPORT,
            "timeout",
            id="stall-mid-reply",
        ),
        pytest.param(
            {"error_class": ErrorClass.STREAM_CUT, "http_status": 200},
            Outcome.TRANSPORT,
            "stream_cut",
            id="cut",
        ),
        *(
            pytest.param(
                {"error_class": ErrorClass.HTTP_STATUS, "error_code": c, "http_status": c},
                Outcome.TRANSPORT,
                f"http_{c}",
                id=f"http-{c}",
            )
            for c in (408, 429, 500, 502, 503, 524, 529)
        ),
        *(
            pytest.param(
                {"error_class": ErrorClass.HTTP_STATUS, "error_code": c, "http_status": c},
                Outcome.INCONCLUSIVE,
                f"http_{c}",
                id=f"http-{c}",
            )
            for c in (400, 401, 402, 403, 404)
        ),
        pytest.param(
            {"error_class": MID, "error_code": 502, "http_status": 200},
            Outcome.TRANSPORT,
            "midstream_502",
            id="midstream-502",
        ),
        pytest.param(
            {"error_class": MID, "error_code": 429, "http_status": 200},
            Outcome.TRANSPORT,
            "midstream_429",
            id="midstream-429",
        ),
        pytest.param(
            {"error_class": MID, "error_code": 400, "http_status": 200},
            Outcome.INCONCLUSIVE,
            "midstream_error",
            id="midstream-400",
        ),
        pytest.param(
            {"error_class": MID, "http_status": 200},
            Outcome.INCONCLUSIVE,
            "midstream_error",
            id="midstream-none",
        ),
        pytest.param(
            {"error_class": ErrorClass.PROTOCOL, "http_status": 200, "error_detail": "HTTP 200 text/html"},
            Outcome.FAIL,
            "protocol_violation",
            id="protocol-violation",
        ),
        pytest.param(
            {"error_class": ErrorClass.BAD_FRAME, "error_detail": "probe failed internally"},
            Outcome.TRANSPORT,
            "bad_frame",
            id="bad-frame-unattributed",
        ),
        pytest.param({}, Outcome.TRANSPORT, "no_response", id="no-response"),
    ],
)
def test_exchange_outcomes(fields: dict[str, object], outcome: Outcome | None, reason: str | None) -> None:
    a = _attempt(**fields)
    j = exchange_judgement(a)
    if outcome is None:
        assert j is None and not is_transport(a)
        return
    assert j is not None and (j.outcome, j.reason) == (outcome, reason)
    assert is_transport(a) is (outcome is Outcome.TRANSPORT)
    if outcome is Outcome.FAIL:
        assert j.reason is Reason.PROTOCOL_VIOLATION and "text/html" in j.evidence



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


def test_recorder_first_fault_wins() -> None:
    err = Chunk({"error": {"code": 502, "message": "boom"}})
    a = _recorded([err, Chunk({"error": {"code": 400, "message": "later"}})])
    assert (a.error_class, a.error_code, a.error_detail) == (ErrorClass.MIDSTREAM_ERROR, 502, "boom")
    a = _recorded([err, BadFrame(FrameProblem.NOT_JSON, "x", head=b"x", size=1)])
    assert a.error_class is ErrorClass.MIDSTREAM_ERROR


@pytest.mark.parametrize(
    ("frame", "says"),
    [
        (BadFrame(FrameProblem.NOT_JSON, "{nope", head=b"{nope", size=5), "not JSON: '{nope' (5 bytes)"),
        (BadFrame(FrameProblem.NOT_OBJECT, "[1]", head=b"[1]", size=3), "not an object: '[1]' (3 bytes)"),
        (
            BadFrame(FrameProblem.INVALID_UTF8, "\ufffd", head=b"\xff\n", size=2),
            "not valid UTF-8: '\\xff\\n'",
        ),
        (BadFrame(FrameProblem.LINE_TOO_LONG, "x", head=b"data: xx", size=2_000_000), "cap: stopped reading"),
    ],
    ids=lambda v: v.problem.value if isinstance(v, BadFrame) else "",
)
def test_an_undecodable_frame_is_a_protocol_violation_and_ends_the_stream(frame: BadFrame, says: str) -> None:
    a = _recorded([_text("Hello"), frame, _text(" there", finish_reason="stop"), Done()])
    assert a.error_class is ErrorClass.PROTOCOL and a.error_code is None
    assert says in (a.error_detail or "") and "after chunks (1)" in (a.error_detail or "")
    assert a.text == "Hello" and a.finish_reason is None  # reading stopped at the violation
    assert "\n" not in (a.error_detail or "")


def test_a_body_that_is_no_event_stream_is_a_protocol_violation() -> None:
    a = _recorded([BadFrame(FrameProblem.NOT_SSE, "<html>", head=b"<!DOCTYPE html>", size=15), _text("x")])
    assert a.error_class is ErrorClass.PROTOCOL and a.text == ""
    assert "not an event stream, first line '<!DOCTYPE html>' (15 bytes)" in (a.error_detail or "")


def test_a_frame_with_invalid_utf8_that_still_parsed_keeps_its_text() -> None:
    frame = BadFrame(FrameProblem.INVALID_UTF8, "x", chunk=_text("caf\ufffd").data, head=b"caf\xc3", size=4)
    a = _recorded([frame])
    assert a.error_class is ErrorClass.PROTOCOL and a.text == "caf\ufffd" and a.ttft_ms is not None


def test_a_stray_non_sse_line_after_data_began_is_ignored_and_a_cut_line_is_a_cut() -> None:
    a = _recorded(
        [_text("Hi"), BadFrame(FrameProblem.NOT_SSE, "x", head=b"x", size=1), _text("", finish_reason="stop")]
    )
    assert a.error_class is None and a.finish_reason == "stop"
    a = _recorded([_text("Hi"), BadFrame(FrameProblem.INCOMPLETE, "data: {", head=b"data: {", size=7)])
    assert a.error_class is ErrorClass.STREAM_CUT


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


# --- whatever the wire sends, a round is judged, never crashed ---------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
_CHOICE = st.fixed_dictionaries(
    {},
    optional={
        "delta": st.dictionaries(st.sampled_from(["content", "role", "reasoning"]), _JSON, max_size=3),
        "finish_reason": _JSON,
        "native_finish_reason": _JSON,
    },
)
_CHUNKISH = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.lists(_CHOICE, max_size=2) | _JSON,
        "error": _JSON,
        "provider": _JSON,
        "usage": _JSON,
    },
)
_FRAME = st.one_of(
    _CHUNKISH.map(lambda c: b"data: " + json.dumps(c).encode() + b"\n\n"),
    st.binary(max_size=60).map(lambda b: b"data: " + b + b"\n\n"),
    st.binary(max_size=60),
    st.sampled_from(
        [b": OPENROUTER PROCESSING\n\n", b"data: [DONE]\n\n", b"\r\n", b"<html>\n", b"\xff\xfe\n"]
    ),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_FRAME, max_size=12), st.sampled_from(list(probed())))
def test_any_wire_bytes_become_an_attempt_that_every_judge_and_the_round_accept(
    frames: list[bytes], contract: Contract
) -> None:
    parser = SSEParser(max_line_bytes=256)
    rec = AttemptRecorder(cap_bytes=200, t0=0.0)
    rec.http_status = 200
    over = False
    for i, frame in enumerate(frames):
        rec.bytes_read += len(frame)
        if any(rec.on_event(e, float(i)) for e in parser.feed(frame)):
            over = True
            break
    if not over:
        for e in parser.close():
            if rec.on_event(e, 99.0):
                break
    endpoint = Endpoint(model="m/x", tag="t", provider_name="T")
    a = rec.to_attempt(
        round_id="r",
        endpoint=endpoint,
        contract=contract,
        attempt_no=1,
        started_at=NOW,
        language="en",
        end=100.0,
    )
    assert a.error_detail is None or "\n" not in a.error_detail
    cfg = CanaryConfig()
    judged = spec_of(contract).judge([a], cfg)
    assert judged.outcome in set(Outcome)
    if a.error_class is ErrorClass.PROTOCOL:
        assert (judged.outcome, judged.reason) == (Outcome.FAIL, Reason.PROTOCOL_VIOLATION)
    results = judge_round([a], [endpoint], cfg)
    assert {r.contract for r in results} == {contract, Contract.OPENING}


