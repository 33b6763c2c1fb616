"""The router's judging (`AnswerJudging`; the routes file's `judge` switch): every answer it passes, checked
with the canary's own judges (provider_canary/router/answer.py).

A non-streamed answer is judged before it is sent (`checks`, on the request's path: the walk may ask the next
tier for a better one). A streamed answer is judged after its last byte went to the client, off the client's
path: the relay folds the events its gate already read (provider_canary/router/stream.py `Gate.read_all`: each event is
parsed once, for the gate and the judging alike) as they go by, up to `judge_keep_bytes`, and hands the folded answer
over through a bounded queue (`later`: never waits; a full queue drops the answer and counts it); one task on
the event loop judges them one at a time, yielding between answers. Each result goes to the attempt observer
(live counts per endpoint and class, metrics).

Schemas come from clients: each distinct one is interned to one object (bounded, least recently used dropped),
so the canary's validator cache (tasks/core/contracts/structured.py, keyed by object) compiles it once. A
`$ref` is never fetched; an answer whose check raises (a schema jsonschema cannot use, nesting too deep) is
not judged and is counted (`errors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from provider_canary.router.answer import CheckResult, Expectations, check, expectations
from provider_canary.router.attempts import AttemptObserver, JudgedAnswer
from provider_canary.router.metrics import RouterMetrics
from provider_canary.router.routes import Route
from tasks.core.contracts.structured import MAX_VALIDATORS
from tasks.core.types import Attempt

log = logging.getLogger("router.judge")

@dataclass(frozen=True, slots=True)
class StreamedAnswer:
    route: Route
    tier_no: int
    provider: str | None
    answer: Attempt  # what the client received, folded by the relay (provider_canary/router/answer.py `AnswerReader`)
    tools: Any  # the client's `tools` and `response_format`, as sent
    response_format: Any


class AnswerJudging:
    def __init__(self, observer: AttemptObserver, metrics: RouterMetrics, queue_size: int,
                 cpu_clock: Callable[[], float] = time.thread_time) -> None:
        self.observer = observer
        self.metrics = metrics
        self.queue: asyncio.Queue[StreamedAnswer] = asyncio.Queue(maxsize=queue_size)
        self.judged = 0
        self.dropped = 0
        self.errors = 0
        self.cpu_s = 0.0  # CPU the judging spent (its thread's time, `cpu_clock`, measured around its own work)
        self._clock = cpu_clock
        self._schemas: OrderedDict[str, Mapping[str, Any]] = OrderedDict()

    def intern(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """One object per distinct schema (its canonical JSON), the last `MAX_VALIDATORS` kept."""
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
        kept = self._schemas.get(key)
        if kept is None:
            kept = self._schemas[key] = schema
            while len(self._schemas) > MAX_VALIDATORS:
                self._schemas.popitem(last=False)
        self._schemas.move_to_end(key)
        return kept

    def expectations(self, tools: Any, response_format: Any) -> Expectations:
        return expectations(tools, response_format, self.intern)

    def checks(self, attempt: Attempt, expected: Expectations) -> tuple[CheckResult, ...]:
        """The answer's checks; none (counted as an error) when a check raises."""
        started = self._clock()
        try:
            found = check(attempt, expected)
        except Exception as exc:  # a client's schema jsonschema cannot use, a $ref it cannot resolve, ...
            self.errors += 1
            self.metrics.unjudged.labels("error").inc()
            log.info("an answer was not judged: %s", type(exc).__name__)
            return ()
        finally:
            self.cpu_s += self._clock() - started
        self.judged += 1
        return found

    def record(self, route: Route, tier_no: int, provider: str | None, checks: tuple[CheckResult, ...]) -> None:
        if checks:
            self.observer.judged(JudgedAnswer(route, tier_no, provider, checks))

    # -- streams: off the client's path -------------------------------------------------------------
    def later(self, answer: StreamedAnswer) -> bool:
        try:
            self.queue.put_nowait(answer)
        except asyncio.QueueFull:
            self.dropped += 1
            self.metrics.unjudged.labels("queue_full").inc()
            return False
        return True

    async def _judge_stream(self, answer: StreamedAnswer) -> None:
        started = self._clock()
        try:
            expected = self.expectations(answer.tools, answer.response_format)
        except (ValueError, TypeError, RecursionError):
            expected = Expectations()
        self.cpu_s += self._clock() - started
        attempt = answer.answer
        provider = attempt.served_provider  # the provider the chunks named
        self.record(answer.route, answer.tier_no, provider, self.checks(attempt, expected))
        await asyncio.sleep(0)

    async def run(self) -> None:
        """Judge queued answers, one at a time, for ever (cancelled at shutdown, after `drain`)."""
        while True:
            answer = await self.queue.get()
            try:
                await self._judge_stream(answer)
            except Exception as exc:  # the judging must outlive any answer
                self.errors += 1
                self.metrics.unjudged.labels("error").inc()
                log.warning("judging a streamed answer failed: %s", type(exc).__name__)
            finally:
                self.queue.task_done()

    async def drain(self, timeout_s: float) -> None:
        """Wait (bounded) until the queued answers are judged: at shutdown, nothing queued is lost silently."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self.queue.join()
        left = self.queue.qsize()
        if left:
            self.dropped += left
            self.metrics.unjudged.labels("queue_full").inc(left)
            log.warning("%d streamed answers were not judged before the router stopped", left)

    def health(self) -> dict[str, float]:
        per_answer = self.cpu_s / self.judged * 1000 if self.judged else 0.0
        return {"queued": self.queue.qsize(), "judged": self.judged, "dropped": self.dropped, "errors": self.errors,
                "cpu_ms_per_answer": round(per_answer, 3)}
