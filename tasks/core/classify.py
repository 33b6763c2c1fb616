"""Transport or quality: the one home of the rule (docs/design.md "Vocabulary"; pure, imports no I/O library).

`transport` = the provider could not be reached or refused service: a connect error, a timeout, HTTP
408/429/5xx (529 included), a stream cut before completion, a mid-stream `error` chunk whose code is
408/429/5xx. Transport never counts as quality. But a response the endpoint opened with HTTP 200 that is not
what was asked (an HTML page instead of an event stream, a non-JSON body, frames that cannot be decoded, a
line over the parser's cap) is `fail` `protocol_violation`: "200 OK but useless" is quality.

What lives here, used by the probe (tasks/probe.py), every contract judge (via `exchange_judgement`) and the
retry predicate of the round's I/O tasks (`is_retryable_exception`):

* `is_transport_status(code)`: an HTTP status (or a mid-stream `error.code`) that means "refused service".
* `EXCEPTION_CLASSES` / `classify_exception(exc)`: an httpx exception → `ErrorClass`, walking the MRO so the
  most specific entry wins. Keys are httpx class *names* (matched only on classes defined by httpx), so the
  core never imports httpx; tests/unit/test_errors_map.py fails when httpx grows an unmapped TransportError.
* `ERROR_OUTCOMES`: `ErrorClass` → the outcome it forces; `exchange_judgement(attempt)` applies it with the
  conditional cases (HTTP and mid-stream codes) and Gatus-style evidence.

Decided here (docs/design.md is silent):
* Any other HTTP error (400, 401, 402, 403, 404, ...) is `inconclusive` (`http_<code>`): the model produced
  nothing, and such codes are mostly about our request or key.
* A mid-stream error with another code (or none) is `inconclusive` (`midstream_error`).
* A timeout after HTTP 200 is `transport` here; the ttft contract judges a 200 without text in time as its
  own `fail` before asking this module.
* `bad_frame` (no longer produced by the probe; older rows, and an internal failure of the probe task) is a
  broken exchange we cannot attribute: `transport`.
"""

from __future__ import annotations

from collections.abc import Mapping

from tasks.core.types import Attempt, ErrorClass, Judgement, Outcome, Reason, http_reason, midstream_reason
from tasks.errors import StoreError

#: HTTP statuses (and mid-stream error codes) that mean "refused service", not "answered badly".
TRANSPORT_HTTP_CODES: frozenset[int] = frozenset({408, 429} | set(range(500, 600)))

#: What each wire fault forces, when it does not depend on a code: None = decided by the code
#: (HTTP_STATUS, MIDSTREAM_ERROR: `is_transport_status`).
ERROR_OUTCOMES: Mapping[ErrorClass, Outcome | None] = {
    ErrorClass.CONNECT: Outcome.TRANSPORT,
    ErrorClass.TIMEOUT: Outcome.TRANSPORT,
    ErrorClass.STREAM_CUT: Outcome.TRANSPORT,
    ErrorClass.BAD_FRAME: Outcome.TRANSPORT,
    ErrorClass.HTTP_STATUS: None,
    ErrorClass.MIDSTREAM_ERROR: None,
    ErrorClass.PROTOCOL: Outcome.FAIL,
}

#: httpx exception class name → what went wrong on the wire. Every TransportError subclass is listed;
#: DecodingError is a body whose Content-Encoding does not decode: a 200 that is not what was asked.
EXCEPTION_CLASSES: Mapping[str, ErrorClass] = {
    "HTTPError": ErrorClass.STREAM_CUT,  # last resort: an unknown failure while talking to the peer
    "RequestError": ErrorClass.STREAM_CUT,
    "TransportError": ErrorClass.STREAM_CUT,
    "TimeoutException": ErrorClass.TIMEOUT,
    "ConnectTimeout": ErrorClass.CONNECT,  # no connection within connect_timeout_s
    "ReadTimeout": ErrorClass.TIMEOUT,  # no headers, or silence between bytes, past read_timeout_s
    "WriteTimeout": ErrorClass.TIMEOUT,
    "PoolTimeout": ErrorClass.TIMEOUT,
    "NetworkError": ErrorClass.STREAM_CUT,
    "ConnectError": ErrorClass.CONNECT,  # refused, unreachable, DNS, TLS handshake
    "ReadError": ErrorClass.STREAM_CUT,  # reset while reading
    "WriteError": ErrorClass.CONNECT,  # the request could not be sent
    "CloseError": ErrorClass.STREAM_CUT,
    "ProtocolError": ErrorClass.STREAM_CUT,
    "RemoteProtocolError": ErrorClass.STREAM_CUT,  # peer closed mid-message / malformed HTTP framing
    "LocalProtocolError": ErrorClass.CONNECT,  # we could not send a valid request
    "ProxyError": ErrorClass.CONNECT,
    "UnsupportedProtocol": ErrorClass.CONNECT,
    "DecodingError": ErrorClass.PROTOCOL,
}


def _httpx_mro(exc: BaseException) -> list[type]:
    return [c for c in type(exc).__mro__ if c.__module__.split(".")[0] == "httpx"]


def is_transport_status(code: int | None) -> bool:
    """An HTTP status or mid-stream `error.code` that means the provider refused service (408/429/5xx)."""
    return code is not None and code in TRANSPORT_HTTP_CODES


def classify_exception(exc: BaseException) -> ErrorClass:
    """An httpx exception → ErrorClass, most specific mapped class first; STREAM_CUT when none matches."""
    for cls in _httpx_mro(exc):
        if cls.__name__ in EXCEPTION_CLASSES:
            return EXCEPTION_CLASSES[cls.__name__]
    return ErrorClass.STREAM_CUT


def is_retryable_exception(exc: BaseException) -> bool:
    """The retry predicate of I/O tasks (discovery, store windows): the network or a held store lock only."""
    if isinstance(exc, StoreError):
        return True
    return any(cls.__name__ == "TransportError" for cls in _httpx_mro(exc))


def is_orchestrator_blip(exc: BaseException) -> bool:
    """The retry predicate of a model's round in a cycle: the orchestrator's API did not answer (the network,
    or a 408/429/5xx from it, e.g. Prefect's SQLite-backed server answering 503 under load), never a round's
    own failure. A retried round replaces its stored attempts and its decisions are not taken twice."""
    if is_retryable_exception(exc):
        return True
    if not any(cls.__name__ == "HTTPStatusError" for cls in _httpx_mro(exc)):
        return False
    response = getattr(exc, "response", None)
    return is_transport_status(getattr(response, "status_code", None))


def exchange_judgement(a: Attempt) -> Judgement | None:
    """`fail`/`transport`/`inconclusive` when the exchange did not complete normally; None when it did."""
    ec = a.error_class
    if ec is ErrorClass.PROTOCOL:
        return protocol_judgement(a)
    if ec is ErrorClass.CONNECT:
        return Judgement(Outcome.TRANSPORT, Reason.CONNECT, f"error (connect) {a.error_detail or ''}".strip())
    if ec is ErrorClass.TIMEOUT:
        where = "before any response" if a.http_status is None else f"after http_status ({a.http_status})"
        return Judgement(Outcome.TRANSPORT, Reason.TIMEOUT, f"timeout {where}, total_ms ({_ms(a.total_ms)})")
    if ec is ErrorClass.STREAM_CUT:
        return Judgement(
            Outcome.TRANSPORT,
            Reason.STREAM_CUT,
            f"stream cut after chunks ({a.chunk_count}), text_chars ({len(a.text)})",
        )
    if ec is ErrorClass.BAD_FRAME:
        detail = f": {a.error_detail}" if a.error_detail else ""
        return Judgement(
            Outcome.TRANSPORT, Reason.BAD_FRAME, f"broken exchange after chunks ({a.chunk_count}){detail}"
        )
    if ec is ErrorClass.MIDSTREAM_ERROR:
        if is_transport_status(a.error_code):
            return Judgement(
                Outcome.TRANSPORT, midstream_reason(a.error_code), f"midstream error.code ({a.error_code})"
            )
        return Judgement(
            Outcome.INCONCLUSIVE, Reason.MIDSTREAM_ERROR, f"midstream error.code ({a.error_code})"
        )
    status = a.error_code if ec is ErrorClass.HTTP_STATUS and a.error_code else a.http_status
    if ec is ErrorClass.HTTP_STATUS or (status is not None and status != 200):
        if is_transport_status(status):
            return Judgement(Outcome.TRANSPORT, http_reason(status), f"http_status ({status})")
        return Judgement(
            Outcome.INCONCLUSIVE, http_reason(status), f"http_status ({status}) not a transport code"
        )
    if a.http_status is None:
        return Judgement(Outcome.TRANSPORT, Reason.NO_RESPONSE, "http_status (none)")
    if a.finish_reason == "error":
        if is_transport_status(a.error_code):
            return Judgement(
                Outcome.TRANSPORT, midstream_reason(a.error_code), f"finish_reason (error) {a.error_code}"
            )
        return Judgement(
            Outcome.INCONCLUSIVE, Reason.PROVIDER_ERROR, f"finish_reason (error) code ({a.error_code})"
        )
    return None


def protocol_judgement(a: Attempt) -> Judgement | None:
    """`fail` `protocol_violation` for an attempt whose 200 response was not what was asked; else None.

    Every contract judge asks this first, before its own rules, so the outcome is the same whatever the
    contract (the evidence is the probe's one-line account: what was seen, escaped first bytes, byte counts).
    """
    if a.error_class is not ErrorClass.PROTOCOL:
        return None
    return Judgement(Outcome.FAIL, Reason.PROTOCOL_VIOLATION, a.error_detail or "protocol violation")


def is_transport(a: Attempt) -> bool:
    """Whether the attempt's exchange says nothing about output quality (see `exchange_judgement`)."""
    j = exchange_judgement(a)
    return j is not None and j.outcome is Outcome.TRANSPORT


def _ms(value: float | None) -> str:
    return "none" if value is None else f"{value:.0f}"
