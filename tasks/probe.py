"""One pinned, streamed probe request → one `Attempt` (docs/design.md "Contracts"; openrouter-api.md 2-4, 7).

`probe_once` never raises for a provider fault: whatever the wire does (refuses, stalls, cuts, sends garbage,
errors mid-stream) becomes data on the attempt (`error_class`, `error_code`, `error_detail`), and a partial
stream keeps its partial text. The contracts judge the attempt later; this module only measures.

Time budgets (cfg): ``connect_timeout_s`` for the connection, ``read_timeout_s`` for silence between bytes
(keep-alive comments reset it), ``probe_budget_s`` for the whole attempt (keep-alives do not extend it). The
budget is enforced after the headers by a watchdog that shuts the socket down at the deadline, so even a
silent stall ends on time; before the headers, the connect and read timeouts (each capped by the budget)
bound the wait. TTFT keeps being measured past ``cfg.ttft_s``: the judge, not the probe, applies thresholds.

httpx exceptions are mapped at one boundary, `tasks.http_errors.classify_exception` (most specific class first,
httpx style); what counts as transport is decided in tasks/core/classify.py, not here. Retry-After is read by
`tasks.core.http_rules.parse_retry_after`, as the router and the Slack client read it.

An HTTP error's detail keeps the error object's message and the relayed cause (`metadata.provider_name` and
`metadata.raw`, bounded: tasks/core/sse_chunks.py `chunk_error`); a redirect's keeps its Location (never followed).

A 200 that is not what was asked is recorded as `protocol_violation` (tasks/core/classify.py makes it a `fail`):
a body whose content-type is neither an event stream nor JSON (an HTML page: its first bytes are read, up to
`SNIFF_CAP_BYTES`, never the rest), a JSON body that is not a JSON object (or is over its cap, or is not
UTF-8), and on a stream a frame that does not decode or a line over the parser's cap (reading stops there,
so a 20 MB line costs about 1 MiB). A missing content-type is read as an event stream: a body with no SSE in
it before the first chunk is caught by the parser (`not_sse`).
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import socket
import threading
import time
from datetime import datetime
from typing import Any

import httpx

from tasks.clock import Clock
from tasks.config import CanaryConfig
from tasks.core.http_rules import is_redirect_status, parse_retry_after
from tasks.core.probe_request import build_request, prompt_language
from tasks.core.sse import SSEParser, escape_bytes
from tasks.core.sse_chunks import chunk_error, one_line
from tasks.core.types import Attempt, Endpoint, ErrorClass
from tasks.http_errors import classify_exception
from tasks.probe_record import AttemptRecorder

#: Attribution headers (openrouter-api.md 7). With a non-public referer OpenRouter needs the title too.
ATTRIBUTION_REFERER = "https://github.com/provider-canary"
ATTRIBUTION_TITLE = "provider-canary"
#: Bytes of a non-200 (or non-SSE 200) body read for its error message; the rest is never read.
ERROR_BODY_CAP_BYTES = 64 * 1024
#: Bytes read of a 200 body that is neither an event stream nor JSON: enough evidence, never the whole page.
SNIFF_CAP_BYTES = 4 * 1024

class _Deadlines:
    """One thread per process that fires watchdogs at their deadlines (monotonic seconds).

    A `threading.Timer` per attempt started and ended a thread each time: ~0.9 ms of the probe worker's CPU per
    attempt, a fifth of it (measured against the history fleet at 16 in flight). A disarmed watchdog stays in
    the heap until its deadline and then does nothing."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Empty, with no thread yet (also a forked child's: it has no deadline thread, maybe a held lock)."""
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Watchdog]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, seconds: float, watchdog: _Watchdog) -> None:
        when = time.monotonic() + max(seconds, 0.0)
        with self._cond:
            earliest = self._heap[0][0] if self._heap else math.inf
            heapq.heappush(self._heap, (when, next(self._order), watchdog))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="probe-deadlines", daemon=True)
                self._thread.start()
            elif when < earliest:  # the thread sleeps until the earliest deadline: wake it for an earlier one
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        watchdog = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(self._heap[0][0] - now if self._heap else None)
            watchdog.fire()


_DEADLINES = _Deadlines()
os.register_at_fork(after_in_child=_DEADLINES.reset)


class _Watchdog:
    """Shuts the response's socket down at the deadline, so a silent stall cannot outlive the budget.

    Uses httpcore's documented ``network_stream`` response extension. Without it (e.g. a mock transport) the
    budget is still checked after every received block.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.fired = False

    def arm(self, response: httpx.Response, seconds: float) -> None:
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        self._sock = sock
        _DEADLINES.add(seconds, self)

    def fire(self) -> None:
        with self._lock:
            if self._sock is None:
                return
            self.fired = True
            try:
                # The plain-socket method: on an SSLSocket it leaves the SSL object to the reading thread.
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def disarm(self) -> None:
        with self._lock:
            self._sock = None


def probe_once(
    client: httpx.Client,
    *,
    base_url: str,
    api_key: str,
    endpoint: Endpoint,
    contract: str,
    round_id: str,
    attempt_no: int,
    language: str | None,
    cfg: CanaryConfig,
    clock: Clock,
    body: dict[str, Any] | None = None,
) -> Attempt:
    """Send one pinned probe to `endpoint` and record everything the wire showed.

    `body` is the request the caller built (tasks/core/probe_request.py), `language` then the prompt's; without
    it the request is built here from the registry."""
    recorded = language if body is not None and language is not None else prompt_language(contract, language)
    if body is None:
        body = build_request(contract, endpoint.model, endpoint.tag, language, cfg, attempt_no=attempt_no)
    headers = {
        "Authorization": f"Bearer {api_key}",
        "Accept": "text/event-stream",
        "HTTP-Referer": ATTRIBUTION_REFERER,
        "X-OpenRouter-Title": ATTRIBUTION_TITLE,
    }
    budget = cfg.probe_budget_s
    timeout = httpx.Timeout(
        connect=min(cfg.connect_timeout_s, budget),
        read=min(cfg.read_timeout_s, budget),
        write=min(cfg.read_timeout_s, budget),
        pool=min(cfg.connect_timeout_s, budget),
    )
    started_at = clock.now()
    t0 = clock.monotonic()
    deadline = t0 + budget
    rec = AttemptRecorder(cap_bytes=cfg.text_cap_bytes, t0=t0, secret=api_key)
    watchdog = _Watchdog()
    try:
        with client.stream(
            "POST", base_url.rstrip("/") + "/chat/completions", json=body, headers=headers, timeout=timeout
        ) as response:
            rec.http_status = response.status_code
            watchdog.arm(response, deadline - clock.monotonic())
            try:
                kind = _body_kind(response)
                if response.status_code != 200:
                    _read_error_response(response, rec, clock.now())
                elif kind == "json":
                    _read_json_body(response, rec, clock)
                elif kind == "other":
                    _read_foreign_body(response, rec, clock)
                else:
                    _read_event_stream(response, rec, clock, deadline, watchdog)
            finally:
                watchdog.disarm()
    except Exception as exc:
        if watchdog.fired:  # the socket was shut under a read: whatever surfaced, it is the budget
            rec.fail(ErrorClass.TIMEOUT, detail=f"probe budget of {budget:g}s exceeded")
        elif isinstance(exc, httpx.HTTPError):
            rec.fail(classify_exception(exc), detail=f"{type(exc).__name__}: {exc}")
        else:
            raise
    return rec.to_attempt(
        round_id=round_id,
        endpoint=endpoint,
        contract=contract,
        attempt_no=attempt_no,
        started_at=started_at,
        language=recorded,
        end=clock.monotonic(),
    )


def _body_kind(response: httpx.Response) -> str:
    """`sse` (an event stream, or no content-type: the parser decides), `json`, or `other` (text/html...)."""
    content_type = response.headers.get("content-type", "").lower()
    if "event-stream" in content_type or not content_type.strip():
        return "sse"
    return "json" if "json" in content_type else "other"


def _read_capped(response: httpx.Response, cap: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    for data in response.iter_bytes():
        parts.append(data)
        size += len(data)
        if size >= cap:
            break
    return b"".join(parts)[:cap]


def _read_error_response(response: httpx.Response, rec: AttemptRecorder, now: datetime) -> None:
    status = response.status_code
    rec.retry_after_s = parse_retry_after(response.headers.get("retry-after"), now)
    detail = f"HTTP {status} {response.reason_phrase}".strip()
    try:
        raw = _read_capped(response, ERROR_BODY_CAP_BYTES)
    except httpx.HTTPError:
        raw = b""
    text = raw.decode("utf-8", "replace")
    try:
        payload: Any = json.loads(text)
    except ValueError:
        payload = None
    error = chunk_error(payload) if isinstance(payload, dict) else None
    if is_redirect_status(status):  # never followed (tasks/core/classify.py "Redirects"): the Location is the evidence
        location = one_line(response.headers.get("location", ""), 200) or "none"
        detail = f"HTTP {status}: redirect to '{location}'"
    elif error is not None and error[1]:
        detail = f"HTTP {status}: {error[1]}"
    elif text.strip():
        detail = f"HTTP {status}: {one_line(text, 200)}"
    rec.fail(ErrorClass.HTTP_STATUS, code=status, detail=detail)


def _read_json_body(response: httpx.Response, rec: AttemptRecorder, clock: Clock) -> None:
    """A 200 that is not SSE: an error body (openrouter-api.md 4c) or a whole non-streamed completion."""
    cap = ERROR_BODY_CAP_BYTES + 4 * rec.cap_bytes
    raw = _read_capped(response, cap + 1)
    rec.bytes_read = len(raw)
    ctype = one_line(response.headers.get("content-type", ""), 80)
    payload, problem = _json_object(raw[:cap])
    if len(raw) > cap:
        problem = f"over the {cap}-byte cap, stopped reading"
    if payload is None:
        seen = f"'{escape_bytes(raw)}' ({_bytes_read(raw, cap)})"
        detail = f"HTTP 200 {ctype} body is not a JSON object ({problem}): {seen}"
        rec.fail(ErrorClass.PROTOCOL, detail=detail)
        return
    rec.on_chunk(payload, clock.monotonic())
    rec.done = True


def _read_foreign_body(response: httpx.Response, rec: AttemptRecorder, clock: Clock) -> None:
    """A 200 that is neither an event stream nor JSON by its content-type (an HTML page, text/plain...).

    An OpenRouter error object sent with the wrong content-type is still read as one (its code decides);
    anything else is a protocol violation with its first bytes as evidence, and the rest is never read.
    """
    raw = _read_capped(response, SNIFF_CAP_BYTES + 1)
    rec.bytes_read = len(raw)
    payload, _ = _json_object(raw[:SNIFF_CAP_BYTES])
    if payload is not None and chunk_error(payload) is not None:
        rec.on_chunk(payload, clock.monotonic())
        rec.done = True
        return
    ctype = one_line(response.headers.get("content-type", ""), 80)
    seen = f"'{escape_bytes(raw)}' ({_bytes_read(raw, SNIFF_CAP_BYTES)})"
    rec.fail(ErrorClass.PROTOCOL, detail=f"HTTP 200 content-type ({ctype}) is not an event stream: {seen}")


def _json_object(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """(the JSON object, "") or (None, what is wrong with the bytes)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"invalid UTF-8 at byte {exc.start}"
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):
        return None, "not JSON"
    if not isinstance(payload, dict):
        return None, f"JSON {type(payload).__name__}, not an object"
    return payload, ""


def _bytes_read(raw: bytes, cap: int) -> str:
    return f"{cap} bytes read, the rest not read" if len(raw) > cap else f"{len(raw)} bytes"


def _read_event_stream(
    response: httpx.Response, rec: AttemptRecorder, clock: Clock, deadline: float, watchdog: _Watchdog
) -> None:
    parser = SSEParser()
    for data in response.iter_bytes():
        now = clock.monotonic()
        rec.bytes_read += len(data)
        for event in parser.feed(data):
            if rec.on_event(event, now):
                return
        if now >= deadline:
            rec.fail(ErrorClass.TIMEOUT, detail=f"probe budget of {deadline - rec.t0:g}s exceeded")
            return
    now = clock.monotonic()
    if watchdog.fired or now >= deadline:  # the watchdog's shutdown can look like a clean end of body
        rec.fail(ErrorClass.TIMEOUT, detail=f"probe budget of {deadline - rec.t0:g}s exceeded")
        return
    for event in parser.close():
        if rec.on_event(event, now):
            return
    if not rec.done and rec.finish_reason is None:
        rec.fail(ErrorClass.STREAM_CUT, detail="stream ended before a finish_reason or [DONE]")

