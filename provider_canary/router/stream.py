"""The first-chunk commit rule as a pure state machine (sans-I/O, h11-style: bytes in, actions out).

A streamed upstream response goes through a `Gate`. Before the commit, complete SSE events are *held*:
keep-alive comments (`: OPENROUTER PROCESSING`), role-only or empty deltas and usage-only chunks do not
count. The first **content-bearing** chunk (non-empty `content` or `reasoning`, a tool call, or a normal
`finish_reason`) is the commit point: the held events plus that chunk go to the client in one `Commit`,
and from then on every complete event is forwarded byte for byte (`Send`).

A `finish_reason` before any output is an answer that finished empty. When its `native_finish_reason` names
an upstream failure (tasks/core/classify.py `names_upstream_failure`: OpenRouter's `network_error`), it is
no answer: `FailOver(native_<word>)`, on every tier. A plain empty `stop` (no failure named) fails over as
`empty_answer` while another tier could answer (`Gate.fail_over_empty`, set by the caller), and is the
commit point on the last tier (the client gets that tier's empty answer). `length` and `content_filter` say
why the answer is empty and are the commit point.

Before the commit, any trouble yields `FailOver(reason)`: the caller closes the upstream and tries the
next tier; the client has seen nothing. After the commit, trouble yields `Abort(data)`: one SSE `data:`
chunk with a top-level `error` object (OpenRouter's mid-stream error shape), after which the client stream
ends. A second tier's text is never spliced in. Only complete events are ever forwarded, so the error
chunk always starts on an event boundary.

    state   input                          -> actions
    waiting comment / empty chunk          -> (held)
    waiting content chunk                  -> Commit(held + chunk)            -> committed
    waiting finish, no output, native fail -> FailOver(native_<word>)
    waiting finish stop, no output         -> FailOver(empty_answer) if fail_over_empty, else Commit
    waiting [DONE] / EOF / read error      -> FailOver(stream_ended|stream_error_before_commit)
    waiting top-level error / bad frame    -> FailOver(error_chunk|bad_frame_before_commit)
    waiting budget exhausted               -> FailOver(first_chunk_timeout)
    committed any event                    -> Send(event)
    committed [DONE]                       -> Send, Finish                    -> closed
    committed EOF / read error / idle budget exhausted:
              after a finish_reason        -> Send([DONE]), Finish            -> closed  (the answer is whole)
              after the upstream's error   -> Finish                          -> closed
              otherwise                    -> Abort(error chunk)              -> closed

A finish chunk means the answer is whole: whatever the connection does afterwards (a reset, a chunked body
never terminated, silence past the idle budget, the usage chunk cut halfway), the client's stream ends cleanly
with the `[DONE]` the upstream did not send, and the attempt counts `ok`.

Events are cut and read as the probe reads them (tasks/core/wire/sse.py); their `Kind`: stream_events.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import provider_canary.router.reasons as reasons
import provider_canary.router.records as records
from provider_canary.router.reasons import Cause, FailoverReason
from provider_canary.router.stream_events import (
    Kind,
    classify,
    error_code,
    error_summary,
    finish_reason,
    kind_of,
    may_change_state,
    native_error,
    plain_text_only,
    usage_tokens,
)
from tasks.core.classify import MASKING_FINISH_REASONS
from tasks.core.wire.sse import Chunk, Event, last_boundary, read_event, split_events

#: Bytes held before the commit (comments, empty chunks); past it the upstream is treated as broken.
MAX_HELD_BYTES = 1 << 20
#: An incomplete event longer than this is a broken stream, not a slow one.
MAX_PENDING_BYTES = 4 << 20
#: The stream's last event, sent for an upstream whose own was lost after the finish chunk.
DONE = b"data: [DONE]\n\n"


class Phase(StrEnum):
    WAITING = "waiting"  # no content chunk yet: the client has received nothing
    COMMITTED = "committed"  # the client is bound to this tier
    CLOSED = "closed"  # terminal: the caller stops reading


#: One event as the gate read it: its size in bytes and what it carries (tasks/core/wire/sse.py `read_event`).
Frame = tuple[int, Event | None]


@dataclass(frozen=True, slots=True)
class Commit:
    data: bytes  # everything held so far plus the first content chunk
    frames: tuple[Frame, ...] = ()  # `Gate.read_all`: the events of `data`, as read


@dataclass(frozen=True, slots=True)
class Send:
    data: bytes
    frames: tuple[Frame, ...] = ()  # `Gate.read_all`: the events of `data`, as read


@dataclass(frozen=True, slots=True)
class FailOver:
    reason: FailoverReason  # first_chunk_timeout, stream_ended_before_commit, native_network_error, ...
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Finish:
    pass


@dataclass(frozen=True, slots=True)
class Abort:
    data: bytes  # the error chunk to send before ending the client stream
    reason: FailoverReason  # stream_cut_after_commit, stream_error_after_commit, idle_timeout_after_commit


Action = Commit | Send | FailOver | Finish | Abort


@dataclass(frozen=True, slots=True)
class Gate:
    phase: Phase = Phase.WAITING
    pending: bytes = b""  # an incomplete event
    held: bytes = b""  # complete events held back before the commit
    done: bool = False  # saw data: [DONE]
    finished: bool = False  # saw a finish_reason
    errored: bool = False  # the upstream sent its own error chunk after the commit
    prompt_tokens: int | None = None  # usage.prompt_tokens of the upstream's usage chunk (billed)
    completion_tokens: int | None = None  # usage.completion_tokens of the same chunk
    chunk_id: str | None = None
    created: int | None = None
    model: str | None = None
    provider: str | None = None
    native_error: str | None = None  # a native_finish_reason naming an upstream error (e.g. network_error)
    error_code: int | None = None  # the code of the upstream's own error chunk after the commit
    fail_over_empty: bool = False  # another tier could answer: an empty `stop` before any output fails over
    read_all: bool = False  # read every event after the commit too and hand the frames on (the judge reads them)
    held_frames: tuple[Frame, ...] = ()  # `read_all`: the held events, as read


def _meta(gate: Gate, chunk: dict[str, Any] | None) -> Gate:
    if chunk is None:
        return gate
    created = chunk.get("created")
    return replace(
        gate,
        chunk_id=chunk.get("id") if isinstance(chunk.get("id"), str) else gate.chunk_id,
        created=created if isinstance(created, int) else gate.created,
        model=chunk.get("model") if isinstance(chunk.get("model"), str) else gate.model,
        provider=chunk.get("provider") if isinstance(chunk.get("provider"), str) else gate.provider,
        native_error=native_error(chunk) or gate.native_error,
    )


def _fail(cause: Cause, detail: str, word: object = None) -> FailOver:
    return FailOver(reasons.fixed(cause, word), detail)


#: Finish reasons that say why an answer is empty (the client asked for the limit, or a filter ended it).
EXPLAINED_EMPTY = frozenset({"length", "content_filter"})


def _empty_finish(gate: Gate, chunk: dict[str, Any], raw: bytes, frame: Frame) -> tuple[Gate, list[Action]]:
    """A finish before any output (module docstring): an upstream failure, an empty answer, or the commit."""
    native = native_error(chunk)
    finish = finish_reason(chunk)
    closed = replace(_meta(gate, chunk), phase=Phase.CLOSED)
    if native is not None and finish in MASKING_FINISH_REASONS:
        return closed, [FailOver(reasons.native(native), f"native_finish_reason ({native}), no content")]
    if gate.fail_over_empty and finish not in EXPLAINED_EMPTY:
        return closed, [_fail(Cause.EMPTY_ANSWER, f"finish_reason ({finish}), no content or tool call")]
    committed = replace(_meta(gate, chunk), phase=Phase.COMMITTED, held=b"", held_frames=(), finished=True)
    return committed, [Commit(gate.held + raw, _frames(gate, frame))]


def _frames(gate: Gate, frame: Frame) -> tuple[Frame, ...]:
    return (*gate.held_frames, frame) if gate.read_all else ()


def _waiting_event(gate: Gate, raw: bytes) -> tuple[Gate, list[Action]]:
    event = read_event(raw, first=not gate.held, max_bytes=MAX_PENDING_BYTES)
    kind, chunk = kind_of(event)
    frame = (len(raw), event)
    if kind in (Kind.KEEPALIVE, Kind.EMPTY):
        gate = replace(_meta(gate, chunk), held=gate.held + raw, held_frames=_frames(gate, frame))
        if len(gate.held) > MAX_HELD_BYTES:
            return replace(gate, phase=Phase.CLOSED), [_fail(Cause.BAD_FRAME_BEFORE_COMMIT, "too much preamble")]
        return gate, []
    if kind is Kind.CONTENT:
        assert chunk is not None
        finished = finish_reason(chunk) is not None
        committed = replace(_meta(gate, chunk), phase=Phase.COMMITTED, held=b"", held_frames=(), finished=finished)
        return committed, [Commit(gate.held + raw, _frames(gate, frame))]
    if kind is Kind.FINISH:
        assert chunk is not None
        return _empty_finish(gate, chunk, raw, frame)
    closed = replace(gate, phase=Phase.CLOSED)
    if kind is Kind.DONE:
        return closed, [_fail(Cause.STREAM_ENDED_BEFORE_COMMIT, "[DONE] before any content")]
    if kind is Kind.ERROR:
        return closed, [_fail(Cause.ERROR_CHUNK_BEFORE_COMMIT, error_summary(chunk), error_code(chunk))]
    return closed, [_fail(Cause.BAD_FRAME_BEFORE_COMMIT, raw[:80].decode("utf-8", "replace"))]


def _committed_event(gate: Gate, raw: bytes) -> tuple[Gate, Kind]:
    """Fast path: most chunks are plain text deltas; parse only the ones that can change the state."""
    if b"[DONE]" in raw or may_change_state(raw):
        return _committed_kind(gate, *classify(raw, max_bytes=MAX_PENDING_BYTES))
    return gate, Kind.CONTENT


def _committed_kind(gate: Gate, kind: Kind, chunk: dict[str, Any] | None) -> tuple[Gate, Kind]:
    """What a committed event changes: the end ([DONE]), the usage, the upstream's own error, a finish."""
    if kind is Kind.DONE:
        return replace(gate, done=True), kind
    prompt, completion = usage_tokens(chunk)
    if prompt is not None or completion is not None:
        gate = replace(gate, prompt_tokens=prompt, completion_tokens=completion)
    if kind is Kind.ERROR:
        return replace(gate, errored=True, error_code=error_code(chunk)), kind
    if chunk is not None and any(isinstance(c, dict) and c.get("finish_reason") for c in chunk.get("choices") or []):
        return replace(gate, finished=True, native_error=native_error(chunk) or gate.native_error), kind
    return gate, kind


def feed(gate: Gate, data: bytes) -> tuple[Gate, list[Action]]:
    """Bytes read from the upstream -> the new gate and what to do."""
    if gate.phase is Phase.CLOSED:
        return gate, []
    buffer = gate.pending + data
    if gate.phase is Phase.COMMITTED and not gate.read_all and len(buffer) <= MAX_PENDING_BYTES:
        # fast path after the commit: forward every complete event at once, parse nothing
        cut = last_boundary(buffer)
        if plain_text_only(buffer[:cut]):
            gate = replace(gate, pending=buffer[cut:]) if gate.pending or cut != len(buffer) else gate
            return gate, [Send(buffer[:cut])] if cut else []
    events, rest = split_events(buffer)
    gate = replace(gate, pending=rest) if rest or gate.pending else gate
    actions: list[Action] = []
    out = bytearray()
    frames: list[Frame] = []
    for raw in events:
        if gate.phase is Phase.WAITING:
            gate, acts = _waiting_event(gate, raw)
            actions.extend(acts)
            if gate.phase is Phase.CLOSED:
                return gate, actions
        elif gate.phase is Phase.COMMITTED:
            if gate.read_all:  # every event read once, its frame handed on; classified only if it can matter
                event = read_event(raw, max_bytes=MAX_PENDING_BYTES)
                frames.append((len(raw), event))
                if isinstance(event, Chunk) and not may_change_state(raw):
                    kind = Kind.CONTENT
                else:
                    gate, kind = _committed_kind(gate, *kind_of(event))
            else:
                gate, kind = _committed_event(gate, raw)
            out += raw
            if kind is Kind.DONE:
                gate = replace(gate, phase=Phase.CLOSED)
                break
    if out:
        actions.append(Send(bytes(out), tuple(frames)))
    if gate.phase is Phase.CLOSED:
        actions.append(Finish())
    elif len(gate.pending) > MAX_PENDING_BYTES:
        gate, more = broken(gate, "an event larger than the pending cap")
        actions.extend(more)
    return gate, actions


def error_chunk(gate: Gate, reason: FailoverReason, now_s: int) -> bytes:
    """OpenRouter's mid-stream error chunk (docs/openrouter-api.md 3e) as one SSE event, its `error` in OpenAI's
    shape (records.py `error_body`: string `code`, `type`, `param`; the numeric code under `metadata`)."""
    timeout = reason.cause is Cause.IDLE_TIMEOUT_AFTER_COMMIT
    status, code, error_type = (504, "upstream_timeout", "timeout") if timeout else \
        (502, "upstream_stream_failed", "provider_unavailable")
    message = f"upstream stream failed after the reply began ({reason}); the reply is incomplete"
    chunk = {
        "id": gate.chunk_id or f"gen-router-{now_s}",
        "object": "chat.completion.chunk",
        "created": gate.created if gate.created is not None else now_s,
        "model": gate.model or "",
        "provider": gate.provider or "",
        **records.error_body(status, message, code=code, error_type=error_type, router_reason=str(reason)),
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error", "native_finish_reason": "error"}],
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode("utf-8") + b"\n\n"


def _whole_end(gate: Gate) -> list[Action] | None:
    """How a committed stream ends when its connection does (EOF, a read error, silence): cleanly once the
    answer is whole (a finish_reason: the lost [DONE] is sent) or the upstream said its own error; None: cut."""
    if gate.done or gate.errored:
        return [Finish()]
    if gate.finished:
        return [Send(DONE), Finish()]
    return None


def _flush_pending_at_eof(gate: Gate) -> tuple[Gate, list[Action]]:
    """A last event without its blank line is processed only when it is a whole, valid event."""
    if not gate.pending.strip():
        return replace(gate, pending=b""), []
    kind, _ = classify(gate.pending, first=gate.phase is Phase.WAITING and not gate.held, max_bytes=MAX_PENDING_BYTES)
    if kind is Kind.BAD and gate.phase is Phase.WAITING:  # a 200 that is no event stream (an HTML page)
        detail = gate.pending[:80].decode("utf-8", "replace")
        return replace(gate, phase=Phase.CLOSED, pending=b""), [_fail(Cause.BAD_FRAME_BEFORE_COMMIT, detail)]
    if kind is Kind.BAD:
        return replace(gate, pending=b""), []
    return feed(replace(gate, pending=b""), gate.pending + b"\n\n")


def eof(gate: Gate, now_s: int = 0) -> tuple[Gate, list[Action]]:
    """The upstream closed its stream."""
    if gate.phase is Phase.CLOSED:
        return gate, []
    gate, actions = _flush_pending_at_eof(gate)
    if gate.phase is Phase.CLOSED:
        return gate, actions
    if gate.phase is Phase.WAITING:
        return replace(gate, phase=Phase.CLOSED), actions + [
            _fail(Cause.STREAM_ENDED_BEFORE_COMMIT, "stream closed before any content")
        ]
    closed = replace(gate, phase=Phase.CLOSED)
    return closed, actions + (_whole_end(gate) or [_abort(gate, Cause.STREAM_CUT_AFTER_COMMIT, now_s)])


def _abort(gate: Gate, cause: Cause, now_s: int) -> Abort:
    reason = reasons.fixed(cause)
    return Abort(error_chunk(gate, reason, now_s), reason)


def broken(gate: Gate, detail: str, now_s: int = 0) -> tuple[Gate, list[Action]]:
    """A read error (connection reset, protocol error) from the upstream."""
    if gate.phase is Phase.CLOSED:
        return gate, []
    closed = replace(gate, phase=Phase.CLOSED)
    if gate.phase is Phase.WAITING:
        return closed, [_fail(Cause.STREAM_ERROR_BEFORE_COMMIT, detail)]
    return closed, _whole_end(gate) or [_abort(gate, Cause.STREAM_ERROR_AFTER_COMMIT, now_s)]


def timed_out(gate: Gate, now_s: int = 0) -> tuple[Gate, list[Action]]:
    """The budget ran out: the first-chunk budget before the commit, the idle budget after it."""
    if gate.phase is Phase.CLOSED:
        return gate, []
    closed = replace(gate, phase=Phase.CLOSED)
    if gate.phase is Phase.WAITING:
        return closed, [_fail(Cause.FIRST_CHUNK_TIMEOUT, "no content chunk within the budget")]
    return closed, _whole_end(gate) or [_abort(gate, Cause.IDLE_TIMEOUT_AFTER_COMMIT, now_s)]
