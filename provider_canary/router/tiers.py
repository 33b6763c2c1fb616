"""Pure tier ordering and cooldowns (sans-I/O; the clock is passed in as monotonic seconds).

Rules (provider_canary/router/ROUTES.md "Failover"):

1. Tiers are walked in the order the route defines. Nothing here looks at speed: a faster lower tier is
   never promoted.
2. A tier whose upstream answered 429/503 (or any failover status) with `Retry-After` cools down for that
   many seconds (capped by `max_cooldown_s`). While cooling it is **deferred**, not dropped: the walk tries
   every non-cooling tier first, in key order, then the cooling ones, in key order, as the last resort. An
   upstream that may still be rate-limited is a better last answer than the router's own 503, and
   Retry-After is often conservative; but it never gets traffic while a healthy tier is left.
3. Failover happens on connect errors, timeouts, 408, 429, 5xx (500-599, so 524 and 529 too), a mid-stream
   error or silence before the first content chunk, and OpenRouter's 404 "No allowed providers are available
   for the selected model." (reason `no_allowed_providers`): that one is about the tier (its provider
   preferences plus the ignore list left nothing), not the request, and another tier may well have a
   provider left. So does its 404 "No endpoints found that can handle the requested parameters" (or "...
   that support tool use"; reason `no_endpoints_for_parameters`): another tier's model may take them. Any
   other status (400, 401, 402, 403, other 404s, 413, 422) is about the request itself:
   it goes back to the client as is, because every tier would refuse it. The status classes are
   tasks/core/http_rules.py's (`is_try_again_status`, shared with the probe), and so is the Retry-After
   parser (`parse_retry_after`, which provider_canary/router/app.py applies before `cool_down`).
4. A tier that pins its providers (`only`, or `order` with `allow_fallbacks = false`) and whose pinned
   providers are all in the request's merged ignore list (the client's, the tier's and the canary's) is
   skipped without a request (reason `pinned_providers_excluded`): the canary has quarantined every
   provider it may use, so the upstream could only answer "no allowed providers".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import provider_canary.router.reasons as reasons
from provider_canary.router.reasons import Cause, FailoverReason
from tasks.core.http_rules import is_try_again_status

#: The reason recorded for a tier skipped because the ignore list excludes every provider it pins (rule 4).
SKIP_PINNED_EXCLUDED = reasons.fixed(Cause.PINNED_EXCLUDED)
#: OpenRouter's 404 bodies that are about the tier, not the request (rule 3), and the reason of each.
_TIER_404: tuple[tuple[bytes, FailoverReason], ...] = (
    (b"no allowed providers", reasons.fixed(Cause.NO_ALLOWED_PROVIDERS)),
    (b"no endpoints found that", reasons.fixed(Cause.NO_ENDPOINTS)),
)

#: upstream_id -> monotonic time (s) until which that upstream is cooling down.
Cooldowns = Mapping[str, float]

EMPTY_COOLDOWNS: Cooldowns = MappingProxyType({})


def failover_reason(status: int, body: bytes) -> FailoverReason | None:
    """Why an upstream's non-200 answer moves the request to the next tier, or None if it is the request's:
    408, 429 and every 5xx (524, 529 included: `is_try_again_status`), or a 404 of rule 3."""
    if is_try_again_status(status):
        return reasons.http(status)
    if status == 404:
        head = body[:4096].lower()
        return next((reason for text, reason in _TIER_404 if text in head), None)
    return None


def _excludes(ignore: set[str], pinned: str) -> bool:
    """`pinned` (a tag or a provider slug) is excluded by the tag itself or by its provider's base slug;
    an ignored tag (`lambda/fp8`) does not exclude a pinned provider slug (`lambda`), which has others."""
    tag = pinned.strip().lower()
    return tag in ignore or tag.split("/", 1)[0] in ignore


def pinned_all_excluded(provider: Mapping[str, object] | None) -> bool:
    """Rule 4 over the merged provider preferences sent to a tier: True when the tier may only use providers
    its `ignore` list excludes (`only`, or `order` with `allow_fallbacks` false, every entry excluded)."""
    if not provider:
        return False
    raw_ignore = provider.get("ignore")
    ignore = {str(t).strip().lower() for t in raw_ignore} if isinstance(raw_ignore, list) else set()
    if not ignore:
        return False
    pinned_sets = [provider.get("only")]
    if provider.get("allow_fallbacks") is False:
        pinned_sets.append(provider.get("order"))
    return any(
        isinstance(pins, list) and pins and all(isinstance(p, str) and _excludes(ignore, p) for p in pins)
        for pins in pinned_sets
    )


def is_cooling(cooldowns: Cooldowns, upstream_id: str, now: float) -> bool:
    return cooldowns.get(upstream_id, float("-inf")) > now


def walk_order(upstream_ids: Sequence[str], cooldowns: Cooldowns, now: float) -> tuple[int, ...]:
    """Indices of the tiers to try, in order: the non-cooling ones in key order, then the cooling ones."""
    ready = [i for i, u in enumerate(upstream_ids) if not is_cooling(cooldowns, u, now)]
    cooling = [i for i, u in enumerate(upstream_ids) if is_cooling(cooldowns, u, now)]
    return tuple(ready + cooling)


def cool_down(
    cooldowns: Cooldowns, upstream_id: str, now: float, seconds: float | None, max_cooldown_s: float
) -> Cooldowns:
    """A new mapping with `upstream_id` cooling for `seconds` (capped); never shortens a longer cooldown."""
    if seconds is None or seconds <= 0 or max_cooldown_s <= 0:
        return cooldowns
    until = now + min(seconds, max_cooldown_s)
    if cooldowns.get(upstream_id, float("-inf")) >= until:
        return cooldowns
    updated = dict(cooldowns)
    updated[upstream_id] = until
    return MappingProxyType(updated)


def prune(cooldowns: Cooldowns, now: float) -> Cooldowns:
    """Drop expired entries (keeps the mapping small on a long-running router)."""
    if all(until > now for until in cooldowns.values()):
        return cooldowns
    return MappingProxyType({u: t for u, t in cooldowns.items() if t > now})


def shortest_wait(cooldowns: Cooldowns, upstream_ids: Sequence[str], now: float) -> float | None:
    """Seconds until the first of these upstreams stops cooling (for the router's own Retry-After)."""
    waits = [cooldowns[u] - now for u in upstream_ids if is_cooling(cooldowns, u, now)]
    return min(waits) if waits else None
