"""What an httpx exception means: the one place that maps them (it imports httpx, so it is the shell's).

* `EXCEPTION_CLASSES` / `classify_exception(exc)`: an httpx exception → the `ErrorClass` of the wire fault,
  walking the MRO so the most specific entry wins (httpx style). The probe records it on the attempt
  (tasks/probe/attempt.py; tasks/core/classify.py judges it); the router names its failover reason after it
  (provider_canary/router/upstream.py: `connect`, `timeout`, else `transport_error`). tests/unit/test_wire_rules.py
  fails when httpx grows a TransportError this table does not list.
* `is_retryable_exception(exc)`: the retry predicate of the round's I/O tasks (discovery, store windows).
* `is_orchestrator_blip(exc)`: the retry predicate of a model's round in a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from tasks.core.http_rules import is_try_again_status
from tasks.core.types import ErrorClass
from tasks.errors import StoreError

#: httpx exception class → what went wrong on the wire. Every TransportError subclass is listed; DecodingError
#: is a body whose Content-Encoding does not decode: a 200 that is not what was asked.
EXCEPTION_CLASSES: Mapping[type[httpx.HTTPError], ErrorClass] = {
    httpx.HTTPError: ErrorClass.STREAM_CUT,  # last resort: an unknown failure while talking to the peer
    httpx.RequestError: ErrorClass.STREAM_CUT,
    httpx.TransportError: ErrorClass.STREAM_CUT,
    httpx.TimeoutException: ErrorClass.TIMEOUT,
    httpx.ConnectTimeout: ErrorClass.CONNECT,  # no connection within connect_timeout_s
    httpx.ReadTimeout: ErrorClass.TIMEOUT,  # no headers, or silence between bytes, past read_timeout_s
    httpx.WriteTimeout: ErrorClass.TIMEOUT,
    httpx.PoolTimeout: ErrorClass.TIMEOUT,
    httpx.NetworkError: ErrorClass.STREAM_CUT,
    httpx.ConnectError: ErrorClass.CONNECT,  # refused, unreachable, DNS, TLS handshake
    httpx.ReadError: ErrorClass.STREAM_CUT,  # reset while reading
    httpx.WriteError: ErrorClass.CONNECT,  # the request could not be sent
    httpx.CloseError: ErrorClass.STREAM_CUT,
    httpx.ProtocolError: ErrorClass.STREAM_CUT,
    httpx.RemoteProtocolError: ErrorClass.STREAM_CUT,  # peer closed mid-message / malformed HTTP framing
    httpx.LocalProtocolError: ErrorClass.CONNECT,  # we could not send a valid request
    httpx.ProxyError: ErrorClass.CONNECT,
    httpx.UnsupportedProtocol: ErrorClass.CONNECT,
    httpx.DecodingError: ErrorClass.PROTOCOL,
}


def classify_exception(exc: BaseException) -> ErrorClass:
    """An httpx exception → ErrorClass, most specific mapped class first; STREAM_CUT when none matches."""
    for cls in type(exc).__mro__:
        if cls in EXCEPTION_CLASSES:
            return EXCEPTION_CLASSES[cls]
    return ErrorClass.STREAM_CUT


def is_retryable_exception(exc: BaseException) -> bool:
    """The retry predicate of I/O tasks (discovery, store windows): the network or a held store lock only (a
    file that cannot be read or written fails the same way next time: it is a loud failure, not retried)."""
    if isinstance(exc, StoreError):
        return exc.busy
    return isinstance(exc, httpx.TransportError)


def is_orchestrator_blip(exc: BaseException) -> bool:
    """The retry predicate of a model's round in a cycle: the orchestrator's API did not answer (the network,
    or a 408/429/5xx from it, e.g. Prefect's SQLite-backed server answering 503 under load), never a round's
    own failure. A retried round replaces its stored attempts and its decisions are not taken twice."""
    if is_retryable_exception(exc):
        return True
    return isinstance(exc, httpx.HTTPStatusError) and is_try_again_status(exc.response.status_code)
