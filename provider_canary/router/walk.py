"""The walk over a route's tiers, in key order (provider_canary/router/tiers.py): each tier skipped (every provider it
pins is on the canary's ignore list, or its circuit is open: provider_canary/router/breaker.py, circuits.py), failed
over, or the answer. A stream commits on its first content chunk (provider_canary/router/stream.py, upstream.py) and
goes out through provider_canary/router/stream_response.py; a non-streamed 200 is weighed in
provider_canary/router/whole_response.py. The tier keys are masked out of every byte relayed
(provider_canary/router/masking.py). When every tier failed the answer held back is handed out, else the router's 503;
when the router's own pool has no connection free (`max_connections`) the walk ends with 503 `router_overloaded`: the
router's saturation, never a tier's."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence

from starlette.responses import JSONResponse, Response

import provider_canary.router.answer as answers
from provider_canary.router import reasons, records
from provider_canary.router import tiers as tier_rules
from provider_canary.router.attempts import Stage
from provider_canary.router.breaker import Admission
from provider_canary.router.payload import build_body, merge_provider
from provider_canary.router.reasons import Cause
from provider_canary.router.request import OFF_LOOP_BYTES
from provider_canary.router.savings import Savings, measure_savings
from provider_canary.router.shell import RouterShell
from provider_canary.router.stream_response import stream_response
from provider_canary.router.upstream import Committed, Passthrough, TierFailure, try_once, try_stream
from provider_canary.router.walk_state import Walk, attempt, failed_over
from provider_canary.router.whole_response import whole_answer

log = logging.getLogger("router")

#: The reason recorded for a tier skipped because its circuit is open (provider_canary/router/breaker.py).
SKIP_CIRCUIT_OPEN = reasons.fixed(Cause.CIRCUIT_OPEN)


async def walk(shell: RouterShell, w: Walk) -> Response:
    """The walk over the route's tiers: each one skipped, failed over, or the answer."""
    route, body = w.prepared.route, w.prepared.body
    now = shell.clock.monotonic()
    order = tier_rules.walk_order([t.upstream_id for t in route.tiers], shell.cooldown_book.prune(), now)
    plan = []
    for index in order:
        tier = route.tiers[index]
        ignore = shell.ignore.for_tier(tier)
        excluded = tier_rules.pinned_all_excluded(merge_provider(body.get("provider"), tier.provider, ignore))
        plan.append((index, ignore, excluded, excluded or shell.circuits.blocked(tier)))
    last = max((i for i, (_, _, _, out) in enumerate(plan) if not out), default=-1)
    for position, (index, ignore, excluded, _) in enumerate(plan):
        if excluded:  # no request sent
            attempt(shell, w, Stage.SKIPPED, index + 1, reason=tier_rules.SKIP_PINNED_EXCLUDED)
            continue
        response = await _try_admitted(shell, w, index + 1, ignore, another=position < last)
        if response is not None:
            return response
    return _walk_ended(shell, w)


async def _try_admitted(
    shell: RouterShell, w: Walk, tier_no: int, ignore: Sequence[str], another: bool
) -> Response | None:
    """A tier skipped (its circuit is open: provider_canary/router/breaker.py) or tried; a circuit trial that ends
    without an outcome (its client left) frees the trial for the next request."""
    tier = w.prepared.route.tiers[tier_no - 1]
    admission = shell.circuits.admit(tier)
    # counted for the endpoint as the failure that opened it (provider_canary/router/breaker.py)
    if admission is Admission.SKIP:
        opened_by, provider = shell.circuits.opened_by(tier)
        attempt(shell, w, Stage.SKIPPED, tier_no, reason=SKIP_CIRCUIT_OPEN, opened_by=opened_by, provider=provider)
        return None
    if admission is Admission.TRIAL:
        w.trials.add(tier_no)
    try:
        return await _try_tier(shell, w, tier_no, ignore, another)
    finally:
        if admission is Admission.TRIAL and tier_no not in w.recorded:
            shell.circuits.release(tier)


async def _try_tier(shell: RouterShell, w: Walk, tier_no: int, ignore: Sequence[str], another: bool) -> Response | None:
    """One tier: the answer for the client, or None to go on to the next tier."""
    assert shell.client is not None
    p, settings = w.prepared, shell.routes.settings
    tier = p.route.tiers[tier_no - 1]
    baseline = build_body(p.body, tier, ignore)
    sent = build_body(p.body, tier, ignore, p.pipeline.messages) if p.pipeline.changed else baseline
    key = shell.api_keys[tier.api_key_env].get() if tier.api_key_env else None
    headers = records.upstream_headers(tier, key, w.client_headers, p.stream)
    url = f"{tier.base_url}/chat/completions"
    result: TierFailure | Passthrough | Committed
    if p.stream:
        budget_s = p.route.first_chunk_budget(tier_no, settings.first_chunk_budget_s)
        result = await try_stream(shell.client, url, sent, headers, budget_s, shell.clock.monotonic,
                                  settings.idle_timeout_s, fail_over_empty=another, read_all=settings.judge)
    else:
        result = await try_once(shell.client, url, sent, headers, settings.request_timeout_s, shell.clock.monotonic)
    if isinstance(result, TierFailure) and result.reason.is_routers_own:
        return _overloaded(shell, w, tier_no)
    if isinstance(result, Passthrough):  # the tier keys never reach a client (provider_canary/router/masking.py)
        result = dataclasses.replace(result, body=shell.mask(result.body), headers=_masked(shell, result.headers))
    elif isinstance(result, Committed):
        result.headers = _masked(shell, result.headers)
    if isinstance(result, TierFailure):
        failed_over(shell, w, tier_no, result)
        if result.reason.cause is Cause.EMPTY_ANSWER and settings.judge:  # the gate saw the answer end empty
            shell.judging.record(p.route, tier_no, result.provider, answers.EMPTY_REPLY)
        return None
    savings = await _measure(baseline, sent)
    out_headers = records.response_headers(p.route, tier_no, savings, p.pipeline, result.headers)
    if isinstance(result, Committed):
        attempt(shell, w, Stage.COMMITTED, tier_no, latency_ms=result.latency_ms, provider=result.gate.provider)
        return stream_response(shell, w, tier_no, result, out_headers, savings)
    if result.status != 200 or p.stream:  # an error that is the request's (every tier would refuse it)
        attempt(shell, w, Stage.ANSWERED, tier_no, latency_ms=result.latency_ms, status=result.status)
        shell.record_savings(p.route, tier_no, p.pipeline, savings, None, p.stream)
        w.ended(tier_no, f"http_{result.status}")
        return Response(result.body, status_code=result.status, headers=out_headers)
    return await whole_answer(shell, w, tier_no, result, out_headers, savings, another)


def _masked(shell: RouterShell, headers: dict[str, str]) -> dict[str, str]:
    return {k: shell.mask.text(v) for k, v in headers.items()} if shell.mask else headers


async def _measure(baseline: bytes, sent: bytes) -> Savings:
    if len(sent) >= OFF_LOOP_BYTES:
        return await asyncio.to_thread(measure_savings, baseline, sent)
    return measure_savings(baseline, sent)


def _walk_ended(shell: RouterShell, w: Walk) -> Response:
    """Every tier failed or was skipped: the held answer if there is one, else the router's 503."""
    route = w.prepared.route
    if w.held is not None:
        held = w.held
        attempt(shell, w, Stage.HANDED_LATER, held.tier_no, provider=held.provider, status=200)
        w.ended(held.tier_no, "", held.usage)
        return Response(held.result.body, status_code=200, headers=held.headers)
    shell.metrics.all_failed(route.key)
    wait_s = shell.circuits.wait_s(route.tiers, shell.cooldowns)  # until the first tier takes requests again
    status, body, headers = records.walk_failed(route, w.failures, wait_s)
    w.ended(None, "all_failed" if status == 503 else f"http_{status}")
    return JSONResponse(body, status_code=status, headers=headers)


def _overloaded(shell: RouterShell, w: Walk, tier_no: int) -> Response:
    """The router's pool had no connection free for a tier: nothing was sent, no tier is blamed, and another
    tier would wait on the same pool, so the walk ends here."""
    route, settings = w.prepared.route, shell.routes.settings
    shell.metrics.overloaded(route.key)
    log.warning("route %s tier %d: no upstream connection free within %g s (router.max_connections = %d): 503 "
                "router_overloaded%s", route.key, tier_no, settings.connect_timeout_s, settings.max_connections,
                f" for client {w.client}" if w.client else "")
    w.ended(None, "router_overloaded")
    return JSONResponse(records.OVERLOADED, status_code=503, headers={"retry-after": "1"})
