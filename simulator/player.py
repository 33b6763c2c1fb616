"""Plays a planned reply (simulator/plan.py) as SSE events or as a (possibly slow, possibly cut) JSON body."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from simulator import wire
from simulator.fleet import EndpointSpec
from simulator.plan import Plan
from simulator.text import estimate_tokens

if TYPE_CHECKING:
    from simulator.app import SimulatorState

_MIN_SLEEP_S = 0.002


class CutConnection(Exception):
    """Raised inside a response body to drop the TCP connection mid-response (die_after_tokens, stalls)."""

class ReplyPlayer:
    """Plays a Plan as SSE events or as a (possibly slow, possibly cut) JSON body."""

    def __init__(
        self,
        state: SimulatorState,
        request: Request,
        plan: Plan,
        head: dict[str, Any],
        ep: EndpointSpec,
        prompt_tokens: int,
    ) -> None:
        self.state, self.request, self.plan, self.head, self.ep = state, request, plan, head, ep
        self.prompt_tokens = prompt_tokens
        self._debt_s = 0.0

    async def _sleep(self, simulated_s: float) -> None:
        """Scaled sleep; waits under 2 ms are pooled (an event-loop sleep costs ~1 ms whatever its length)."""
        self._debt_s += simulated_s * self.state.time_scale
        if self._debt_s >= _MIN_SLEEP_S and not self.state.stopping.is_set():
            await asyncio.sleep(self._debt_s)
            self._debt_s = 0.0

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
        return [wire.sse(wire.chunk(head, fp, piece)) for piece in self.plan.pieces]

    async def _stall(self, simulated_s: float) -> None:
        deadline = time.monotonic() + simulated_s * self.state.time_scale
        while time.monotonic() < deadline and not self.state.stopping.is_set():
            if await self.request.is_disconnected():
                return
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    async def _delay(self, comments: int, keepalive: bytes) -> AsyncIterator[bytes]:
        """The wait before the first text: keep-alives every keepalive_s, or the first comments spread."""
        plan, delay = self.plan, self.plan.first_delay_s
        if plan.keepalive_s:
            waited = 0.0
            while delay - waited > plan.keepalive_s:
                await self._sleep(plan.keepalive_s)
                waited += plan.keepalive_s
                if await self._gone():
                    return
                yield keepalive
            await self._sleep(delay - waited)
            return
        step = delay / comments
        for _ in range(comments - 1):
            await self._sleep(step)
            yield keepalive
        await self._sleep(step)

    async def events(self) -> AsyncIterator[bytes]:
        plan, head, fp = self.plan, self.head, self.ep.system_fingerprint
        if plan.stall_s is not None:
            await self._stall(plan.stall_s)
            raise CutConnection("stall_after_headers")
        yield wire.KEEPALIVE
        if plan.role_only_first:
            yield wire.sse(wire.chunk(head, fp, ""))
        async for comment in self._delay(plan.comments_before, wire.KEEPALIVE):
            yield comment
        sent = ""
        pieces = plan.pieces if not plan.tool_calls else ("",) * len(self._stream_frames())
        for i, (piece, frame) in enumerate(zip(pieces, self._stream_frames(), strict=True)):
            if plan.cut_after is not None and i >= plan.cut_after:
                raise CutConnection("die_after_tokens")
            if plan.error_after is not None and i >= plan.error_after:
                break
            if i:
                await self._sleep(plan.chunk_interval_s)
            if i % 4 == 3 and await self._gone():
                return
            yield frame
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
        plan = self.plan
        if plan.stall_s is not None:
            await self._stall(plan.stall_s)
            raise CutConnection("stall_after_headers")
        async for newline in self._delay(1, b"\n"):
            yield newline
        body = self.result_bytes()
        if plan.cut_after is not None:
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
