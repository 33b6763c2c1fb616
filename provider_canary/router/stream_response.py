"""The streamed answer of a tier that committed (its first content chunk arrived: provider_canary/router/stream.py,
upstream.py): the relay as a `StreamingResponse`, an abort or the stream's end said as the tier's attempt, the
whole request finished at the relay's last byte, and the answer handed to the judge off the client's path
(provider_canary/router/judging.py) when it ended cleanly."""

from __future__ import annotations

from starlette.responses import StreamingResponse

from provider_canary.router import reasons
from provider_canary.router.attempts import Stage
from provider_canary.router.judging import StreamedAnswer
from provider_canary.router.live import stream_end
from provider_canary.router.savings import Savings
from provider_canary.router.shell import RouterShell
from provider_canary.router.upstream import Committed, Relayed, relay
from provider_canary.router.walk_state import Walk, attempt, finish


def stream_response(
    shell: RouterShell, w: Walk, tier_no: int, committed: Committed, headers: dict[str, str], savings: Savings
) -> StreamingResponse:
    p, started = w.prepared, shell.clock.monotonic()
    judge = shell.routes.settings.judge

    def on_abort(reason: reasons.FailoverReason) -> None:
        latency_ms = (shell.clock.monotonic() - started) * 1000 + committed.latency_ms
        attempt(shell, w, Stage.ABORTED, tier_no, reason=reason, latency_ms=latency_ms,
                provider=committed.gate.provider)

    def on_end(relayed: Relayed) -> None:
        ended, gate = stream_end(relayed.gate, relayed.aborted), relayed.gate
        attempt(shell, w, Stage.ENDED, tier_no, reason=ended, provider=gate.provider)
        shell.record_savings(p.route, tier_no, p.pipeline, savings, gate.prompt_tokens, True)
        why = str(ended) if ended is not None else "" if relayed.completed else "client_gone"
        w.ended(tier_no, why, (gate.prompt_tokens, gate.completion_tokens))
        finish(shell, w)
        if judge and relayed.answer is not None and ended is None:
            shell.judging.later(StreamedAnswer(p.route, tier_no, relayed.gate.provider, relayed.answer,
                                             p.tools, p.response_format))

    keep = shell.routes.settings.judge_keep_bytes if judge else 0
    body = relay(committed, lambda: int(shell.clock.now().timestamp()), on_abort, on_end, keep, shell.mask)
    headers = {**headers, "cache-control": "no-cache", "x-accel-buffering": "no"}
    headers.pop("content-type", None)
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)
