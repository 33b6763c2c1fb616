"""Plays a planned reply (provider_canary/simulator/plan.py) as SSE events or as a (possibly slow, possibly cut) JSON
body."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from enum import Enum
from typing import Any, Protocol

from starlette.requests import Request

from provider_canary.simulator import wire
from provider_canary.simulator.fleet import EndpointSpec
from provider_canary.simulator.plan import Plan
from provider_canary.simulator.text import estimate_tokens


class PlayerState(Protocol):
    """What a reply player reads of the running simulator (provider_canary/simulator/app.py `SimulatorState`)."""

    time_scale: float
    stopping: threading.Event

#: Waits shorter than this (wall seconds) are pooled: see `ReplyPlayer._paced`.
_MIN_SLEEP_S = 0.008
#: While a reply streams, ask whether its client hung up at most this often (seconds of wall time).
_CHECK_EVERY_S = 0.05


class Mark(Enum):
    """A flush in a reply's timeline (`ReplyPlayer._paced`)."""

    FLUSH = "flush"  # send what is buffered now (waits pooled before it may still be owed)
    ON_TIME = "on-time"  # sleep the waits pooled before it, then send: the first text, the client's TTFT


Timeline = Iterator[bytes | float | Mark]


class CutConnection(Exception):
    """Raised inside a response body to drop the TCP connection mid-response (die_after_tokens, stalls)."""


class ReplyPlayer:
    """Plays a Plan as SSE events or as a (possibly slow, possibly cut) JSON body."""

    def __init__(
        self,
        state: PlayerState,
        request: Request,
        plan: Plan,
        head: dict[str, Any],
        ep: EndpointSpec,
        prompt_tokens: int,
    ) -> None:
        self.state, self.request, self.plan, self.head, self.ep = state, request, plan, head, ep
        self.prompt_tokens = prompt_tokens

    async def _paced(self, timeline: Timeline) -> AsyncIterator[bytes]:
        """Play a timeline: bytes to send, waits (simulated seconds) and flushes (`Mark`).

        Waits are scaled and pooled: waits under `_MIN_SLEEP_S` of wall time add up until they reach it, and
        what falls due meanwhile goes out as one send, up to that much early. The same bytes in fewer writes
        and fewer reads, as a client reads them from any busy proxy: a write and its read were most of the CPU
        of the simulator and of the canary's probe worker under a history's load. `Mark.ON_TIME` sleeps the
        pooled waits before sending, so the first text (the client's TTFT) is never early. Raises
        CutConnection (die_after_tokens) after sending what was due before the cut."""
        buffer: list[bytes] = []
        debt, next_check = 0.0, 0.0
        try:
            for item in timeline:
                if isinstance(item, bytes):
                    buffer.append(item)
                    continue
                if not isinstance(item, Mark):
                    debt += item * self.state.time_scale
                    if debt < _MIN_SLEEP_S:
                        continue
                elif item is Mark.FLUSH or debt <= 0:
                    if buffer:
                        yield b"".join(buffer)
                        buffer.clear()
                    continue
                if buffer and item is not Mark.ON_TIME:  # due before this wait
                    yield b"".join(buffer)
                    buffer.clear()
                if not self.state.stopping.is_set():
                    await asyncio.sleep(debt)
                debt = 0.0
                if buffer:  # on time
                    yield b"".join(buffer)
                    buffer.clear()
                if time.monotonic() >= next_check:  # has the client hung up? (a long wait is always checked)
                    if await self._gone():
                        return
                    next_check = time.monotonic() + _CHECK_EVERY_S
        except CutConnection:
            if buffer:
                yield b"".join(buffer)
            raise
        if buffer:
            yield b"".join(buffer)

    async def _gone(self) -> bool:
        """Has the client hung up? (Writes to a closed socket are silently dropped, so ask.)"""
        return self.state.stopping.is_set() or await self.request.is_disconnected()

    def _usage(self, content: str) -> dict[str, Any]:
        produced = content + "".join(c.name + c.arguments for c in self.plan.tool_calls)
        return wire.usage(self.prompt_tokens, estimate_tokens(produced), self.ep)

    def _stream_frames(self) -> list[bytes]:
        """The data frames between the first chunk and the finish chunk: text pieces or tool-call deltas."""
        head, fp = self.head, self.ep.system_fingerprint
        if self.plan.tool_calls:
            return [
                wire.sse(wire.tool_call_chunk(head, fp, d))
                for d in wire.tool_call_deltas(self.plan.tool_calls)
            ]
        return wire.text_frames(head, fp, self.plan.pieces)

    async def _stall(self, simulated_s: float) -> None:
        deadline = time.monotonic() + simulated_s * self.state.time_scale
        while time.monotonic() < deadline and not self.state.stopping.is_set():
            if await self.request.is_disconnected():
                return
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def _delay(self, comments: int, keepalive: bytes) -> Timeline:
        """The wait before the first text: keep-alives every keepalive_s, or the first comments spread."""
        plan, delay = self.plan, self.plan.first_delay_s
        if plan.keepalive_s:
            waited = 0.0
            while delay - waited > plan.keepalive_s:
                yield plan.keepalive_s
                waited += plan.keepalive_s
                yield keepalive
                yield Mark.FLUSH
            yield delay - waited
            return
        step = delay / comments
        for _ in range(comments - 1):
            yield step
            yield keepalive
            yield Mark.FLUSH
        yield step

    async def events(self) -> AsyncIterator[bytes]:
        if self.plan.stall_s is not None:
            await self._stall(self.plan.stall_s)
            raise CutConnection("stall_after_headers")
        async for data in self._paced(self._stream_timeline()):
            yield data

    def _stream_timeline(self) -> Timeline:
        plan, head, fp = self.plan, self.head, self.ep.system_fingerprint
        yield wire.KEEPALIVE
        if plan.role_only_first:
            yield wire.sse(wire.chunk(head, fp, ""))
        yield Mark.FLUSH
        yield from self._delay(plan.comments_before, wire.KEEPALIVE)
        sent = ""
        frames = self._stream_frames()
        pieces = plan.pieces if not plan.tool_calls else ("",) * len(frames)
        for i, (piece, frame) in enumerate(zip(pieces, frames, strict=True)):
            if plan.cut_after is not None and i >= plan.cut_after:
                raise CutConnection("die_after_tokens")
            if plan.error_after is not None and i >= plan.error_after:
                break
            if i:
                yield plan.chunk_interval_s
            yield frame
            if not i:
                yield Mark.ON_TIME  # the client's TTFT is measured on the first content
            sent += piece
        if plan.cut_after is not None:
            raise CutConnection("die_after_tokens")
        if plan.error_after is not None:
            yield wire.sse(wire.midstream_error_chunk(head, plan.error_code, _error_message(plan.error_code)))
            if plan.error_done:
                yield wire.DONE
            return
        yield wire.sse(wire.chunk(head, fp, "", plan.finish_reason, plan.native_finish_reason))
        usage = self._usage(sent)
        yield wire.sse(wire.chunk(head, fp, "", plan.finish_reason, plan.native_finish_reason, usage))
        yield wire.DONE

    def result_bytes(self) -> bytes:
        plan, fp = self.plan, self.ep.system_fingerprint
        if plan.error_after is not None:
            content = "".join(plan.pieces[: plan.error_after])
            error = {
                "code": plan.error_code,
                "message": _error_message(plan.error_code),
                "metadata": {"error_type": wire.ERROR_TYPES.get(plan.error_code, "server")},
            }
            obj = wire.chat_result(self.head, fp, content, "error", "error", self._usage(content), error)
        else:
            obj = wire.chat_result(
                self.head,
                fp,
                plan.content,
                plan.finish_reason,
                plan.native_finish_reason,
                self._usage(plan.content),
                tool_calls=wire.message_tool_calls(plan.tool_calls),
            )
        return wire.dumps(obj).encode("utf-8")

    async def json_slowly(self) -> AsyncIterator[bytes]:
        """Non-streaming with bare-newline keep-alives, a stall, or a cut in the middle of the body."""
        if self.plan.stall_s is not None:
            await self._stall(self.plan.stall_s)
            raise CutConnection("stall_after_headers")
        async for data in self._paced(self._json_timeline()):
            yield data

    def _json_timeline(self) -> Timeline:
        yield from self._delay(1, b"\n")
        body = self.result_bytes()
        if self.plan.cut_after is not None:
            yield body[: max(1, len(body) * 2 // 5)]
            raise CutConnection("die_after_tokens")
        yield body


def _error_message(code: int) -> str:
    return {
        408: "Request timed out",
        429: "Rate limit exceeded",
        500: "Internal Server Error",
        502: "Provider returned error",
        503: "Provider is overloaded",
        524: "Provider timed out",
        529: "Provider is overloaded",
    }.get(code, "Provider returned error")
