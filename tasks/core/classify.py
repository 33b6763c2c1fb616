"""Transport or quality: the one home of the rule (docs/design.md "Vocabulary"; pure, imports no I/O library).

`transport` = the provider could not be reached or refused service: a connect error, a timeout, HTTP
408/429/5xx (529 included), a stream cut before completion, a mid-stream `error` chunk whose code is
408/429/5xx. Transport never counts as quality. But a response the endpoint opened with HTTP 200 that is not
what was asked (an HTML page instead of an event stream, a non-JSON body, frames that cannot be decoded, a
line over the parser's cap) is `fail` `protocol_violation`: "200 OK but useless" is quality.

**The upstream's own word, judged once.** OpenRouter reports a failed upstream hop inside an HTTP 200 as
`finish_reason: "stop"` (or `"error"`) with `native_finish_reason: "network_error"` and no content, in streams
and in JSON bodies (docs/openrouter-api.md 3d). That exchange is `fail` `upstream_error` for the whole
attempt, whatever its contract (`upstream_judgement`, asked first by every judge through `exchange_override`,
and by `exchange_judgement`), with the upstream's words as evidence: `native_finish_reason (network_error),
finish_reason (stop), text_chars (0), provider (Stealth)`. It is never handed to the contracts as an answer
(no `empty_reply`, `invalid_json` or `no_call` for it). Why `fail` and not `transport` (docs/design.md
"Vocabulary"): transport freezes the streaks because OpenRouter fails over on transport errors, so users do not
see them; it does not fail over on a 200, so a user of this endpoint gets an empty reply that says "stop",
which no client retries: "200 OK but useless", as `protocol_violation`. A native reason names an upstream
failure when it contains one of `UPSTREAM_FAILURE_WORDS` (`network_error`, `error`, `timeout`, ...); Gemini's
`MALFORMED_FUNCTION_CALL` (a model's failure, with `finish_reason: "error"`) does not, and stays
`provider_error`; only with `finish_reason` `stop`, `error` or none (`MASKING_FINISH_REASONS`: `length`,
`content_filter` and `tool_calls` keep their own rules). A partial reply does not save it: the failed hop cut
it and called it complete. A failing blip is not a suspension: a hard contract's `fail` is confirmed by a
confirmation round minutes later, and two consecutive failing rounds are needed. An error *object* (in-band
or in a 200 body) keeps its own rule below (its code decides), with the relayed cause (`metadata.raw`,
`metadata.provider_name`) in its evidence.

**Redirects.** A pinned API call is never redirected by OpenRouter; the probe does not follow redirects (an
API client must not re-send a request, key included, to wherever a Location points). An HTTP 3xx is therefore
not an answer: `fail` `protocol_violation` with the Location as evidence (`protocol_judgement`), so an endpoint
answering 302 for ever is suspended and alerted like any useless 200, instead of `inconclusive` for ever.

What lives here, used by the probe (tasks/probe/attempt.py) and every contract judge (via `exchange_judgement`):
`ERROR_OUTCOMES`: `ErrorClass` → the outcome it forces; `exchange_judgement(attempt)` applies it with the
conditional cases (HTTP and mid-stream codes) and Gatus-style evidence. Which codes mean "refused service"
(`is_try_again_status`, the router's failover codes too) and which are redirects are in tasks/core/http_rules.py;
which httpx exception is which `ErrorClass` is in tasks/probe/http_errors.py (the shell: it imports httpx).

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

import re
from collections.abc import Mapping

from tasks.core.http_rules import is_redirect_status, is_try_again_status
from tasks.core.types import Attempt, ErrorClass, Judgement, Outcome, Reason, http_reason, midstream_reason

#: Words that, inside a lower-cased `native_finish_reason` (or a `finish_reason` of "error"), name a failure of
#: the upstream hop rather than a model's stop: `network_error`, `error`, `upstream_error`, `timeout`, ...
UPSTREAM_FAILURE_WORDS: tuple[str, ...] = (
    "error", "timeout", "timed_out", "unavailable", "overloaded", "network", "connection", "disconnect",
)
#: The normalised finish reasons a masked upstream failure comes with; `length`, `content_filter` and
#: `tool_calls` say what ended the reply, so their own rules judge it whatever the native string.
MASKING_FINISH_REASONS: frozenset[str | None] = frozenset({None, "stop", "error"})
#: Native reasons that carry "error" but are the model's own failure, not the hop's.
MODEL_FAILURE_NATIVE: frozenset[str] = frozenset({"malformed_function_call"})
#: Characters of a provider-controlled word (native reason, provider name) quoted in evidence.
WORD_CHARS = 60

#: What each wire fault forces, when it does not depend on a code: None = decided by the code
#: (HTTP_STATUS, MIDSTREAM_ERROR: `is_try_again_status`).
ERROR_OUTCOMES: Mapping[ErrorClass, Outcome | None] = {
    ErrorClass.CONNECT: Outcome.TRANSPORT,
    ErrorClass.TIMEOUT: Outcome.TRANSPORT,
    ErrorClass.STREAM_CUT: Outcome.TRANSPORT,
    ErrorClass.BAD_FRAME: Outcome.TRANSPORT,
    ErrorClass.HTTP_STATUS: None,
    ErrorClass.MIDSTREAM_ERROR: None,
    ErrorClass.PROTOCOL: Outcome.FAIL,
}

def exchange_judgement(a: Attempt) -> Judgement | None:
    """`fail`/`transport`/`inconclusive` when the exchange did not complete normally; None when it did."""
    ec = a.error_class
    if ec is ErrorClass.PROTOCOL:
        return protocol_judgement(a)
    fault = _wire_fault_judgement(a)
    if fault is not None:
        return fault
    status = a.error_code if ec is ErrorClass.HTTP_STATUS and a.error_code else a.http_status
    if is_redirect_status(status):
        return protocol_judgement(a)
    if ec is ErrorClass.HTTP_STATUS or (status is not None and status != 200):
        return _status_judgement(a, status)
    if a.http_status is None:
        return Judgement(Outcome.TRANSPORT, Reason.NO_RESPONSE, "http_status (none)")
    upstream = upstream_judgement(a)
    if upstream is not None:
        return upstream
    if a.finish_reason == "error":
        return _finish_error_judgement(a)
    return None


def _wire_fault_judgement(a: Attempt) -> Judgement | None:
    """The judgement of a broken exchange (connect, timeout, a cut stream, a bad frame, an error event mid-stream);
    None for another error class or none."""
    ec = a.error_class
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
        said = _said(a)
        if is_try_again_status(a.error_code):
            return Judgement(
                Outcome.TRANSPORT, midstream_reason(a.error_code), f"midstream error.code ({a.error_code}){said}"
            )
        return Judgement(
            Outcome.INCONCLUSIVE, Reason.MIDSTREAM_ERROR, f"midstream error.code ({a.error_code}){said}"
        )
    return None


def _status_judgement(a: Attempt, status: int | None) -> Judgement:
    """A non-200 answer: `transport` for a code worth trying again, else `inconclusive`."""
    said = _said(a)
    if is_try_again_status(status):
        return Judgement(Outcome.TRANSPORT, http_reason(status), f"http_status ({status}){said}")
    return Judgement(
        Outcome.INCONCLUSIVE, http_reason(status), f"http_status ({status}) not a transport code{said}"
    )


def _finish_error_judgement(a: Attempt) -> Judgement:
    """A 200 stream that finished with `error`: `transport` for a code worth trying again, else `inconclusive`."""
    if is_try_again_status(a.error_code):
        return Judgement(
            Outcome.TRANSPORT, midstream_reason(a.error_code), f"finish_reason (error) {a.error_code}"
        )
    return Judgement(
        Outcome.INCONCLUSIVE, Reason.PROVIDER_ERROR, f"finish_reason (error) code ({a.error_code})"
    )


def protocol_judgement(a: Attempt) -> Judgement | None:
    """`fail` `protocol_violation` for an attempt whose 200 response was not what was asked, or that was
    answered with a redirect (HTTP 3xx, not followed); else None.

    Every contract judge asks this first, before its own rules, so the outcome is the same whatever the
    contract (the evidence is the probe's one-line account: what was seen, escaped first bytes, byte counts).
    """
    if a.error_class is ErrorClass.HTTP_STATUS and is_redirect_status(a.error_code or a.http_status):
        status = a.error_code or a.http_status
        said = _said(a)
        return Judgement(
            Outcome.FAIL,
            Reason.PROTOCOL_VIOLATION,
            f"http_status ({status}) redirect on a pinned API call, not followed{said or ': no Location'}",
        )
    if a.error_class is not ErrorClass.PROTOCOL:
        return None
    return Judgement(Outcome.FAIL, Reason.PROTOCOL_VIOLATION, a.error_detail or "protocol violation")


def names_upstream_failure(native_finish_reason: str | None) -> bool:
    """A `native_finish_reason` that names a failure of the upstream hop (`network_error`, `timeout`, ...),
    not a model's own stop or failure. The one rule the probe's judges and the router's live records share."""
    native = (native_finish_reason or "").strip().lower()
    return bool(native) and native not in MODEL_FAILURE_NATIVE and any(w in native for w in UPSTREAM_FAILURE_WORDS)


def upstream_failure(a: Attempt) -> str | None:
    """The upstream's own word for a failed hop reported inside a 200 without an error object, or None.

    That is the attempt's `native_finish_reason` when it names an upstream failure (`UPSTREAM_FAILURE_WORDS`),
    or `error` for `finish_reason: "error"` with no error code and no model-failure native reason. An attempt
    with a wire fault of its own (cut, timeout, HTTP error, error object, protocol) is judged by that fault.
    """
    if a.error_class is not None or a.http_status != 200 or a.finish_reason not in MASKING_FINISH_REASONS:
        return None
    native = (a.native_finish_reason or "").strip().lower()
    if native in MODEL_FAILURE_NATIVE:
        return None
    if names_upstream_failure(native):
        return a.native_finish_reason
    if a.finish_reason == "error" and a.error_code is None and not native:
        return "error"
    return None


def upstream_judgement(a: Attempt) -> Judgement | None:
    """`fail` `upstream_error` when `upstream_failure` names one; else None (see the module docstring).

    Partial content does not save it: the reply was cut by the failed hop and reported as complete."""
    word = upstream_failure(a)
    if word is None:
        return None
    parts = [
        f"native_finish_reason ({_word(a.native_finish_reason)})",
        f"finish_reason ({_word(a.finish_reason)})",
        f"text_chars ({len(a.text)})",
    ]
    if a.tool_calls:
        parts.append(f"tool_calls ({len(a.tool_calls)})")
    if a.served_provider:
        parts.append(f"provider ({_word(a.served_provider)})")
    if a.usage.completion_tokens is None and a.usage.cost is None:
        parts.append("no usage")
    return Judgement(Outcome.FAIL, Reason.UPSTREAM_ERROR, ", ".join(parts))


def exchange_override(a: Attempt) -> Judgement | None:
    """The exchange's own judgement, asked by every contract before its own rules: a protocol violation (or
    a redirect) or an upstream failure reported as success; None when the contract may judge the reply."""
    return protocol_judgement(a) or upstream_judgement(a)


def _word(value: str | None) -> str:
    return "none" if not value else _ONE_LINE.sub(" ", value).strip()[:WORD_CHARS]


_ONE_LINE = re.compile(r"\s+")
_HTTP_PREFIX = re.compile(r"^HTTP \d{3}\b[^:]*(?::\s*|$)")


def _said(a: Attempt) -> str:
    """`: <the error's own words>` from the attempt's error detail (its `HTTP nnn` prefix dropped), or ""."""
    detail = (a.error_detail or "").strip()
    rest = _HTTP_PREFIX.sub("", detail, count=1).strip() if detail.startswith("HTTP ") else detail
    return f": {rest}" if rest else ""


def is_transport(a: Attempt) -> bool:
    """Whether the attempt's exchange says nothing about output quality (see `exchange_judgement`)."""
    j = exchange_judgement(a)
    return j is not None and j.outcome is Outcome.TRANSPORT


def _ms(value: float | None) -> str:
    return "none" if value is None else f"{value:.0f}"
