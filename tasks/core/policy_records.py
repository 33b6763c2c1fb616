"""The quarantine policy's records: one endpoint's state, and one decision the policy (or an admin) took.

docs/design.md "The quarantine policy"; tasks/core/policy.py moves the state and produces the decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tasks.core.vocabulary import Action, Mode


@dataclass(frozen=True, slots=True)
class EndpointState:
    """Policy state of one endpoint (docs/design.md "The quarantine policy"); one per (model, tag, mode).

    In observe mode the same machine runs on a shadow copy (mode="observe"), so switching modes never
    mixes real and shadow suspensions.
    """

    model: str
    tag: str
    mode: Mode = Mode.OBSERVE
    fail_streak: int = 0
    clean_streak: int = 0
    suspended_until: datetime | None = None
    suspended_at: datetime | None = None
    ladder_step: int = 0  # steps used in the current ladder episode (0 = none yet)
    last_suspension_end: datetime | None = None
    floor_blocked: bool = False  # a floor_blocked alert was already raised in this episode
    fail_rounds: tuple[str, ...] = ()  # round ids of the failing rounds in the current streak (evidence)
    clean_rounds: tuple[str, ...] = ()  # round ids of the clean rounds in the current streak
    #: round_ts of the round that last grew the current streak (fail or clean: one of them is always 0); a
    #: round closer to it than the policy's `round_spacing` does not grow it. None: no streak, or not known.
    streak_at: datetime | None = None

    @property
    def is_suspended(self) -> bool:
        return self.suspended_until is not None


@dataclass(frozen=True, slots=True)
class Decision:
    """One automatic or manual policy decision, with its evidence (a row of `decisions`)."""

    at: datetime
    model: str
    tag: str
    action: Action
    mode: Mode
    ladder_step: int = 0
    until: datetime | None = None
    reason: str = ""
    evidence_round_ids: tuple[str, ...] = ()
    round_id: str | None = None  # the round that produced it (None for manual lifts)
    actor: str = "canary"  # who: "canary" or the admin's name

    @property
    def decision_id(self) -> str:
        """Stable idempotency key (also the Slack outbox key)."""
        return f"{self.model}|{self.tag}|{self.action}|{self.mode}|{self.at.isoformat()}"
