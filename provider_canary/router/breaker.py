"""A circuit breaker per upstream, as a pure state machine (sans-I/O: the clock is passed in as monotonic seconds).

A tier that fails `allowed_fails` times in a row is **open**: the walk skips it for `cooldown_s`. Then it is
**half-open**: the next request to reach it is its one **trial** (concurrent requests meanwhile skip it). The
trial's success closes the circuit; its failure opens it again for twice the last cooldown, capped at
`max_cooldown_s` (Envoy's outlier detection: `consecutive_5xx`, `base_ejection_time` "multiplied by the number
of times the host has been ejected and capped by max_ejection_time"; LiteLLM's `allowed_fails` + `cooldown_time`).

What counts (`score`, over a `TierAttempt`'s stage and reason):

    FAIL     the upstream failed: connect, timeout, transport error, 408, 5xx, a masked failure (native_<word>,
             error_in_200_<code>), a stream that ended, broke, stalled past its first-chunk budget, sent an
             error chunk or a bad frame before the commit, or failed after it
    OK       the upstream answered: a stream committed, a 200 handed over, an empty or failed-check answer
             (the exchange worked; the judging counts what it was worth)
    NEUTRAL  everything else, never counted: a 429 (Retry-After has its own cooldown), a 4xx about the request,
             no_allowed_providers / no_endpoints_for_parameters (the request's preferences or parameters), a skip,
             a client that left, and any router-side cause (its own saturation): a cause is FAIL only when it
             is listed in `FAILING_CAUSES`, so a cause added later counts for nothing until it is listed

    state        input                                -> state                        change
    closed       FAIL (fails + 1 < allowed_fails)     -> closed, fails + 1
    closed       FAIL (fails + 1 = allowed_fails)     -> open for cooldown_s          OPENED
    closed       OK                                   -> closed, fails 0
    open         admit before open_until              -> open (SKIP)
    open         admit at or after open_until         -> trial in flight (TRIAL)
    open         FAIL / OK / NEUTRAL of a non-trial   -> open (requests sent before it opened: ignored)
    trial        admit                                -> trial (SKIP), unless the trial is older than
                                                         `trial_timeout_s` (it never reported): a new TRIAL
    trial        trial's OK                           -> closed                       CLOSED
    trial        trial's FAIL                         -> open for min(2 x last, max)  OPENED
    trial        trial's NEUTRAL, or released         -> open, no trial (the next request may try)

`allowed_fails = 0` turns the breaker off: every admission is TRY and nothing is recorded.

A skip is still evidence: the request would have gone to this endpoint, which failed `allowed_fails` times in a
row, so provider_canary/router/live.py counts it for the endpoint as the circuit's last failure (`last_reason`, `reason`
`circuit_open` in `live_requests`). An open circuit never hides a broken endpoint from the canary's suspicion;
the trial's answer closes it and the skips stop.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from provider_canary.router.reasons import Cause, FailoverReason

#: Causes that count as the upstream's failure (everything else is neutral: see the module docstring).
FAILING_CAUSES = frozenset({
    Cause.CONNECT, Cause.TIMEOUT, Cause.TRANSPORT_ERROR, Cause.ERROR_IN_200, Cause.NATIVE,
    Cause.FIRST_CHUNK_TIMEOUT, Cause.STREAM_ERROR_BEFORE_COMMIT, Cause.STREAM_ENDED_BEFORE_COMMIT,
    Cause.ERROR_CHUNK_BEFORE_COMMIT, Cause.BAD_FRAME_BEFORE_COMMIT, Cause.STREAM_CUT_AFTER_COMMIT,
    Cause.STREAM_ERROR_AFTER_COMMIT, Cause.IDLE_TIMEOUT_AFTER_COMMIT, Cause.UPSTREAM_ERROR_AFTER_COMMIT,
})
#: Causes that say the upstream answered (the exchange worked, whatever the answer was worth).
ANSWERED_CAUSES = frozenset({Cause.EMPTY_ANSWER, Cause.FAILED_CHECK})


class Score(StrEnum):
    """What one attempt counts as for its tier's circuit (`score`): a failure, a success, or nothing."""

    FAIL = "fail"
    OK = "ok"
    NEUTRAL = "neutral"


class Admission(StrEnum):
    TRY = "try"  # closed: ask it
    TRIAL = "trial"  # half-open: this request is its one trial
    SKIP = "skip"  # open, or another request holds the trial


class Change(StrEnum):
    OPENED = "opened"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Policy:
    allowed_fails: int = 3  # failures in a row that open the circuit (0: off)
    cooldown_s: float = 30.0  # the first open period
    max_cooldown_s: float = 300.0  # the doubled period's cap (never below cooldown_s)
    trial_timeout_s: float = 120.0  # a trial that never reported frees its slot after this long

    @property
    def enabled(self) -> bool:
        return self.allowed_fails > 0

    def open_for(self, opens: int) -> float:
        """Seconds the circuit stays open the `opens`-th time in a row (1: cooldown_s, then doubled, capped)."""
        cap = max(self.max_cooldown_s, self.cooldown_s)
        return min(self.cooldown_s * 2 ** min(max(opens - 1, 0), 32), cap)


@dataclass(frozen=True, slots=True)
class Circuit:
    fails: int = 0  # consecutive failures while closed
    open_until: float | None = None  # None: closed
    opens: int = 0  # times opened in a row (the trial failed each time)
    trial_since: float | None = None  # a trial in flight since then
    last_reason: FailoverReason | None = None  # the last failure: what a skip counts as for the endpoint
    last_provider: str | None = None  # the provider that failed it, when the upstream named one

    @property
    def is_open(self) -> bool:
        """Open or half-open: the circuit is not closed."""
        return self.open_until is not None

    def state(self, now: float) -> str:
        if self.open_until is None:
            return "closed"
        if self.trial_since is not None:
            return "trial"
        return "open" if now < self.open_until else "half_open"


CLOSED = Circuit()


def score(stage: str, reason: FailoverReason | None, status: int | None) -> Score:
    """What an attempt says about its upstream. `stage` is provider_canary/router/attempts.py `Stage`'s value; an abort
    is counted once (the stream's end that follows it is not)."""
    if stage == "committed" or (stage == "answered" and status == 200):
        return Score.OK
    if reason is None or stage not in ("failed_over", "aborted", "ended"):
        return Score.NEUTRAL
    if stage == "ended":
        return Score.FAIL if reason.cause is Cause.UPSTREAM_ERROR_AFTER_COMMIT else Score.NEUTRAL
    if reason.cause in FAILING_CAUSES:
        return Score.FAIL
    if reason.cause is Cause.HTTP and reason.word is not None and reason.word.isdigit():
        code = int(reason.word)
        return Score.FAIL if code == 408 or code >= 500 else Score.NEUTRAL
    return Score.OK if reason.cause in ANSWERED_CAUSES else Score.NEUTRAL


def is_blocked(c: Circuit, now: float, policy: Policy) -> bool:
    """Whether `admit` would say SKIP now (without taking the trial)."""
    if not policy.enabled or c.open_until is None:
        return False
    if now < c.open_until:
        return True
    return c.trial_since is not None and now - c.trial_since < policy.trial_timeout_s


def admit(c: Circuit, now: float, policy: Policy) -> tuple[Circuit, Admission]:
    """May a request be sent to this upstream now? Taking the trial is a state change."""
    if not policy.enabled or c.open_until is None:
        return c, Admission.TRY
    if is_blocked(c, now, policy):
        return c, Admission.SKIP
    return replace(c, trial_since=now), Admission.TRIAL


def record(c: Circuit, v: Score, trial: bool, now: float, policy: Policy, reason: FailoverReason | None = None,
           provider: str | None = None) -> tuple[Circuit, Change | None]:
    """An attempt's score (`trial`: it was this circuit's trial) -> the new circuit and what changed."""
    if not policy.enabled:
        return c, None
    if c.open_until is None:  # closed
        if v is Score.OK:
            return CLOSED, None
        if v is Score.NEUTRAL:
            return c, None
        if c.fails + 1 < policy.allowed_fails:
            return replace(c, fails=c.fails + 1, last_reason=reason, last_provider=provider), None
        return Circuit(fails=c.fails + 1, open_until=now + policy.open_for(1), opens=1, last_reason=reason,
                       last_provider=provider), Change.OPENED
    if not trial or c.trial_since is None:
        return c, None  # sent before it opened: only the trial decides
    if v is Score.OK:
        return CLOSED, Change.CLOSED
    if v is Score.NEUTRAL:
        return replace(c, trial_since=None), None
    opens = c.opens + 1
    return replace(c, open_until=now + policy.open_for(opens), opens=opens, trial_since=None, fails=c.fails + 1,
                   last_reason=reason, last_provider=provider), Change.OPENED


def release(c: Circuit) -> Circuit:
    """The trial ended without an outcome (its client left): the next request may try."""
    return replace(c, trial_since=None) if c.trial_since is not None else c


def remaining_s(c: Circuit, now: float) -> float | None:
    """Seconds until this circuit lets a trial through (None: closed or ready now)."""
    if c.open_until is None or now >= c.open_until:
        return None
    return c.open_until - now
