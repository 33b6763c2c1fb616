"""Why the router gave up a tier, or how a committed stream failed: one vocabulary, with what each means live.

Every reason the router records is a `FailoverReason`: a `Cause` (a fixed reason, or a family formed from the
upstream's own word) and that word. Its string is what route events, the 503 body and metric labels show
(provider_canary/router/ROUTES.md "Route events": an interface, so the strings never change); `live_outcome` is what the
attempt counts as in `live_requests` (None: not counted against the endpoint at all), and `word` is the upstream's own
word for `live_requests.reason` (a `native_finish_reason`, an error object's code), when it gave one.

    cause                         string                          live outcome
    connect / timeout / transport_error                           transport
    HTTP                          http_<status>                   http_429 | http_5xx
    NO_ALLOWED_PROVIDERS          no_allowed_providers            transport
    NO_ENDPOINTS                  no_endpoints_for_parameters     (not counted: the request's parameters)
    PINNED_EXCLUDED               pinned_providers_excluded       (not counted: no request was sent)
    ERROR_IN_200                  error_in_200_<code>             upstream_error
    NATIVE                        native_<word>                   upstream_error   (a masked upstream failure)
    EMPTY_ANSWER                  empty_answer                    ok  (the exchange worked; judged `empty`)
    FAILED_CHECK                  failed_check_<reason>           ok  (the exchange worked; judged fail)
    FIRST_CHUNK_TIMEOUT           first_chunk_timeout             first_chunk_timeout
    STREAM_ERROR_BEFORE_COMMIT    stream_error_before_commit      cut_stream
    STREAM_ENDED_BEFORE_COMMIT    stream_ended_before_commit      upstream_error
    ERROR_CHUNK_BEFORE_COMMIT     error_chunk_before_commit       upstream_error
    BAD_FRAME_BEFORE_COMMIT       bad_frame_before_commit         protocol_violation
    STREAM_CUT / STREAM_ERROR / IDLE_TIMEOUT _AFTER_COMMIT        cut_stream
    UPSTREAM_ERROR_AFTER_COMMIT   (a committed stream that ended with an upstream error: no event) upstream_error
    ROUTER_OVERLOADED             router_overloaded               (not counted: the router had no free connection)
    CIRCUIT_OPEN                  circuit_open                    (skipped: counted as the failure that opened it,
                                                                  TierAttempt.opened_by; its own outcome is none)
    CIRCUIT_OPENED / CLOSED       circuit_opened, circuit_closed  (events of the breaker,
    provider_canary/router/breaker.py)

`router_overloaded` is the router's own saturation (its upstream pool, `max_connections`, had no connection free
within `connect_timeout_s`): no request left the router, so it is never an endpoint's failure, never cools a tier
down and never counts toward a circuit (`is_routers_own`); the walk ends there with 503 `router_overloaded`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from tasks.core.live_records import LiveOutcome

#: Characters of an upstream's word kept in a reason (`native_<word>`) and in `live_requests.reason`.
WORD_CHARS = 40
_NOT_WORD = re.compile(r"[^a-z0-9_]+")


class Cause(StrEnum):
    CONNECT = "connect"  # nothing reached the upstream
    TIMEOUT = "timeout"
    TRANSPORT_ERROR = "transport_error"  # any other httpx error
    HTTP = "http"  # family: http_<status>
    NO_ALLOWED_PROVIDERS = "no_allowed_providers"  # OpenRouter's 404: the tier's preferences left no provider
    NO_ENDPOINTS = "no_endpoints_for_parameters"  # OpenRouter's 404: no endpoint of this model takes the parameters
    PINNED_EXCLUDED = "pinned_providers_excluded"  # skipped: the canary excluded every provider the tier pins
    ERROR_IN_200 = "error_in_200"  # family: error_in_200_<code>, an error object in an HTTP 200
    NATIVE = "native"  # family: native_<word>, finished without output, the upstream naming its failure
    EMPTY_ANSWER = "empty_answer"  # finished without content or tool call, no failure named (not the last tier)
    FAILED_CHECK = "failed_check"  # family: failed_check_<reason>, a non-streamed answer failed its check
    FIRST_CHUNK_TIMEOUT = "first_chunk_timeout"
    STREAM_ERROR_BEFORE_COMMIT = "stream_error_before_commit"
    STREAM_ENDED_BEFORE_COMMIT = "stream_ended_before_commit"
    ERROR_CHUNK_BEFORE_COMMIT = "error_chunk_before_commit"
    BAD_FRAME_BEFORE_COMMIT = "bad_frame_before_commit"
    STREAM_CUT_AFTER_COMMIT = "stream_cut_after_commit"
    STREAM_ERROR_AFTER_COMMIT = "stream_error_after_commit"
    IDLE_TIMEOUT_AFTER_COMMIT = "idle_timeout_after_commit"
    UPSTREAM_ERROR_AFTER_COMMIT = "upstream_error_after_commit"
    ROUTER_OVERLOADED = "router_overloaded"  # no upstream connection free in the router's pool: the router's own
    CIRCUIT_OPEN = "circuit_open"  # skipped: the tier's circuit is open (provider_canary/router/breaker.py)
    CIRCUIT_OPENED = "circuit_opened"  # event: the tier failed allowed_fails times in a row (or its trial failed)
    CIRCUIT_CLOSED = "circuit_closed"  # event: the tier's trial succeeded

    @property
    def is_family(self) -> bool:
        return self in _FAMILIES


_FAMILIES = frozenset({Cause.HTTP, Cause.ERROR_IN_200, Cause.NATIVE, Cause.FAILED_CHECK})

_LIVE: dict[Cause, LiveOutcome | None] = {
    Cause.CONNECT: LiveOutcome.TRANSPORT,
    Cause.TIMEOUT: LiveOutcome.TRANSPORT,
    Cause.TRANSPORT_ERROR: LiveOutcome.TRANSPORT,
    Cause.NO_ALLOWED_PROVIDERS: LiveOutcome.TRANSPORT,
    Cause.NO_ENDPOINTS: None,
    Cause.PINNED_EXCLUDED: None,
    Cause.ERROR_IN_200: LiveOutcome.UPSTREAM_ERROR,
    Cause.NATIVE: LiveOutcome.UPSTREAM_ERROR,
    Cause.EMPTY_ANSWER: LiveOutcome.OK,
    Cause.FAILED_CHECK: LiveOutcome.OK,
    Cause.FIRST_CHUNK_TIMEOUT: LiveOutcome.FIRST_CHUNK_TIMEOUT,
    Cause.STREAM_ERROR_BEFORE_COMMIT: LiveOutcome.CUT_STREAM,
    Cause.STREAM_ENDED_BEFORE_COMMIT: LiveOutcome.UPSTREAM_ERROR,  # a 200 whose stream ended with nothing in it
    Cause.ERROR_CHUNK_BEFORE_COMMIT: LiveOutcome.UPSTREAM_ERROR,
    Cause.BAD_FRAME_BEFORE_COMMIT: LiveOutcome.PROTOCOL_VIOLATION,
    Cause.STREAM_CUT_AFTER_COMMIT: LiveOutcome.CUT_STREAM,
    Cause.STREAM_ERROR_AFTER_COMMIT: LiveOutcome.CUT_STREAM,
    Cause.IDLE_TIMEOUT_AFTER_COMMIT: LiveOutcome.CUT_STREAM,
    Cause.UPSTREAM_ERROR_AFTER_COMMIT: LiveOutcome.UPSTREAM_ERROR,
    Cause.ROUTER_OVERLOADED: None,
    Cause.CIRCUIT_OPEN: None,
    Cause.CIRCUIT_OPENED: None,
    Cause.CIRCUIT_CLOSED: None,
}
#: Causes that are the router's own word about a tier, never an upstream's answer (no Retry-After cools them).
_ROUTERS_OWN = frozenset({Cause.EMPTY_ANSWER, Cause.FAILED_CHECK, Cause.PINNED_EXCLUDED, Cause.CIRCUIT_OPEN,
                          Cause.CIRCUIT_OPENED, Cause.CIRCUIT_CLOSED, Cause.ROUTER_OVERLOADED})


def clean_word(word: object) -> str | None:
    """An upstream's word fit for a reason string and a metric label: lower case, `[a-z0-9_]`, at most
    `WORD_CHARS` characters (a provider controls it); None when nothing is left."""
    if word is None:
        return None
    cleaned = _NOT_WORD.sub("_", str(word).strip().lower()).strip("_")[:WORD_CHARS]
    return cleaned or None


@dataclass(frozen=True, slots=True)
class FailoverReason:
    """A cause and, for the families and where the upstream said something, its word."""

    cause: Cause
    word: str | None = None  # the status, code, native finish reason or check reason (families); else optional

    def __str__(self) -> str:
        if self.cause.is_family:
            return f"{self.cause.value}_{self.word}"
        return self.cause.value

    @property
    def live_outcome(self) -> LiveOutcome | None:
        """What the attempt counts as in `live_requests`; None: not counted against the endpoint."""
        if self.cause is Cause.HTTP:
            return LiveOutcome.HTTP_429 if self.word == "429" else LiveOutcome.HTTP_5XX
        return _LIVE[self.cause]

    @property
    def upstream_word(self) -> str | None:
        """The upstream's own word for `live_requests.reason`: a status or error code, a native finish reason, an
        error chunk's code; None for the router's own judgements (an empty answer, a failed check)."""
        return None if self.cause in (Cause.EMPTY_ANSWER, Cause.FAILED_CHECK) else self.word

    @property
    def cools_down(self) -> bool:
        """Whether the upstream's Retry-After may cool the tier down (an answer it gave is no reason to)."""
        return self.cause not in _ROUTERS_OWN

    @property
    def is_routers_own(self) -> bool:
        """The router's own saturation, not the tier's: no live failure, no cooldown, no circuit count."""
        return self.cause is Cause.ROUTER_OVERLOADED

    @property
    def is_rate_limited(self) -> bool:
        """The upstream said 429: as the status, or as the code of an error in a 200 or in an error chunk."""
        return self.word == "429" and self.cause in (Cause.HTTP, Cause.ERROR_IN_200, Cause.ERROR_CHUNK_BEFORE_COMMIT)

    @property
    def was_sent(self) -> bool:
        """A request went to the upstream (a skip sends none)."""
        return self.cause not in (Cause.PINNED_EXCLUDED, Cause.CIRCUIT_OPEN, Cause.ROUTER_OVERLOADED)


def fixed(cause: Cause, word: object = None) -> FailoverReason:
    assert not cause.is_family, cause
    return FailoverReason(cause, clean_word(word))


def http(status: int) -> FailoverReason:
    return FailoverReason(Cause.HTTP, str(int(status)))


def error_in_200(code: int) -> FailoverReason:
    return FailoverReason(Cause.ERROR_IN_200, str(int(code)))


def native(word: str) -> FailoverReason:
    return FailoverReason(Cause.NATIVE, clean_word(word) or "error")


def failed_check(reason: str) -> FailoverReason:
    return FailoverReason(Cause.FAILED_CHECK, clean_word(reason) or "unknown")
