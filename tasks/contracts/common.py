"""What every contract judge shares: the transport rule and how several attempts combine (pure).

docs/design.md "Vocabulary": `transport` = the provider could not be reached or refused it: connect error,
timeout before any response, HTTP 408/429/5xx/529, a stream cut before completion, a mid-stream `error`
chunk whose code is 408/429/5xx. Transport never counts as quality.

Decided here (docs/design.md is silent):
* Any other HTTP error (400, 401, 402, 403, 404, ...) is `inconclusive` (`http_<code>`): the model produced
  nothing, so the output contracts hold no evidence, and such codes are mostly about our request or key.
* A mid-stream error with another code (or none) is `inconclusive` (`midstream_error`), except that the
  refusal contract judges what arrived first (a `content_filter` finish stays a `fail`).
* A malformed SSE frame (`bad_frame`) is a broken exchange: `transport`.
* Several attempts of one non-language contract (a transport retry) combine to the latest quality
  judgement (pass/fail), else the latest inconclusive, else the latest transport: a retry only ever
  follows a transport failure, so it can never hide a quality failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tasks.types import Attempt, ErrorClass, Judgement, Outcome

#: HTTP codes that mean "refused service" rather than "answered badly".
TRANSPORT_HTTP_CODES: frozenset[int] = frozenset({408, 429, 529} | set(range(500, 600)))


def is_transport_code(code: int | None) -> bool:
    return code is not None and code in TRANSPORT_HTTP_CODES


def exchange_judgement(a: Attempt) -> Judgement | None:
    """`transport`/`inconclusive` when the exchange did not complete normally; None when it did."""
    ec = a.error_class
    if ec is ErrorClass.CONNECT:
        return Judgement(Outcome.TRANSPORT, "connect", f"error (connect) {a.error_detail or ''}".strip())
    if ec is ErrorClass.TIMEOUT:
        where = "before any response" if a.http_status is None else f"after http_status ({a.http_status})"
        return Judgement(Outcome.TRANSPORT, "timeout", f"timeout {where}, total_ms ({_ms(a.total_ms)})")
    if ec is ErrorClass.STREAM_CUT:
        return Judgement(
            Outcome.TRANSPORT,
            "stream_cut",
            f"stream cut after chunks ({a.chunk_count}), text_chars ({len(a.text)})",
        )
    if ec is ErrorClass.BAD_FRAME:
        return Judgement(Outcome.TRANSPORT, "bad_frame", f"bad SSE frame after chunks ({a.chunk_count})")
    if ec is ErrorClass.MIDSTREAM_ERROR:
        if is_transport_code(a.error_code):
            return Judgement(
                Outcome.TRANSPORT, f"midstream_{a.error_code}", f"midstream error.code ({a.error_code})"
            )
        return Judgement(Outcome.INCONCLUSIVE, "midstream_error", f"midstream error.code ({a.error_code})")
    status = a.error_code if ec is ErrorClass.HTTP_STATUS and a.error_code else a.http_status
    if ec is ErrorClass.HTTP_STATUS or (status is not None and status != 200):
        if is_transport_code(status):
            return Judgement(Outcome.TRANSPORT, f"http_{status}", f"http_status ({status})")
        return Judgement(
            Outcome.INCONCLUSIVE, f"http_{status}", f"http_status ({status}) not a transport code"
        )
    if a.http_status is None:
        return Judgement(Outcome.TRANSPORT, "no_response", "http_status (none)")
    if a.finish_reason == "error":
        if is_transport_code(a.error_code):
            return Judgement(
                Outcome.TRANSPORT, f"midstream_{a.error_code}", f"finish_reason (error) {a.error_code}"
            )
        return Judgement(
            Outcome.INCONCLUSIVE, "provider_error", f"finish_reason (error) code ({a.error_code})"
        )
    return None


def latest_judgement(judgements: Sequence[Judgement]) -> Judgement:
    """Latest pass/fail, else latest inconclusive, else latest transport (see module docstring)."""
    if not judgements:
        return Judgement(Outcome.INCONCLUSIVE, "no_attempts", "attempts (0)")
    for wanted in ((Outcome.PASS, Outcome.FAIL), (Outcome.INCONCLUSIVE,), (Outcome.TRANSPORT,)):
        for j in reversed(judgements):
            if j.outcome in wanted:
                return j
    return judgements[-1]


def judge_each(attempts: Sequence[Attempt], judge_one: Callable[[Attempt], Judgement]) -> Judgement:
    ordered = sorted(attempts, key=lambda a: a.attempt_no)
    return latest_judgement([judge_one(a) for a in ordered])


def _ms(value: float | None) -> str:
    return "none" if value is None else f"{value:.0f}"


def fmt_ms(value: float | None) -> str:
    return _ms(value)
