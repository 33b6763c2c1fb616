"""The non-streamed answer of a tier that said HTTP 200: no answer (fail over), not the last word (held back
while another tier could do better), or the client's answer. It is judged before it is sent
(provider_canary/router/answer.py, judging.py): one that came back empty, or failed its tools or structured check on a
route with `retry_failed_checks`, is asked of the next tier and handed out only if none does better."""

from __future__ import annotations

import asyncio

from starlette.responses import Response

import provider_canary.router.answer as answers
from provider_canary.router import reasons
from provider_canary.router.attempts import Stage
from provider_canary.router.reasons import Cause
from provider_canary.router.request import OFF_LOOP_BYTES
from provider_canary.router.savings import Savings
from provider_canary.router.shell import RouterShell
from provider_canary.router.stream_events import usage_tokens
from provider_canary.router.upstream import Passthrough, TierFailure
from provider_canary.router.walk_state import Held, Walk, attempt, failed_over


async def whole_answer(
    shell: RouterShell, w: Walk, tier_no: int, result: Passthrough, headers: dict[str, str], savings: Savings,
    another: bool,
) -> Response | None:
    """A non-streamed HTTP 200: no answer (fail over), not the last word (hold it, fail over), or the answer."""
    p = w.prepared
    if len(result.body) >= OFF_LOOP_BYTES:
        doc = await asyncio.to_thread(answers.parse_json_answer, result.body)
    else:
        doc = answers.parse_json_answer(result.body)
    if doc is None:  # a 200 the client cannot use
        bad = reasons.fixed(Cause.BAD_FRAME_BEFORE_COMMIT)
        failed_over(shell, w, tier_no, TierFailure(bad, "HTTP 200 body is not a JSON object", result.latency_ms))
        return None
    read = answers.read_json(doc)
    provider, usage = read.served_provider, usage_tokens(doc)
    masked = answers.masked_failure(read)
    if masked is not None:
        failed_over(shell, w, tier_no, TierFailure(masked, "", result.latency_ms), provider)
        return None
    checks: tuple[answers.CheckResult, ...] = ()
    if shell.routes.settings.judge:
        checks = shell.judging.checks(read, shell.judging.expectations(p.tools, p.response_format))
        shell.judging.record(p.route, tier_no, provider, checks)
    failed = answers.failed_check(checks)
    empty = answers.is_empty(read)
    flaw = "empty:empty_reply" if empty else f"{failed.quality}:{failed.reason}" if failed else None
    if flaw is not None:
        headers = {**headers, "x-canary-check-failed": flaw}
    if another and (empty or (failed is not None and p.route.retry_failed_checks)):
        why = reasons.fixed(Cause.EMPTY_ANSWER) if empty or failed is None else reasons.failed_check(failed.reason)
        failed_over(shell, w, tier_no, TierFailure(why, "", result.latency_ms), provider)
        w.held = Held(tier_no, result, headers, flaw or "", provider, usage)
        return None
    attempt(shell, w, Stage.ANSWERED, tier_no, latency_ms=result.latency_ms, provider=provider, status=200)
    shell.record_savings(p.route, tier_no, p.pipeline, savings, usage[0], False)
    w.ended(tier_no, "", usage)
    return Response(result.body, status_code=200, headers=headers)
