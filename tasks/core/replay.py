"""Replay: fold the policy's `decide` over recorded round statuses (CLI `canary replay`, what-if runs).

The input format and its parser live in tasks/core/replay_input.py; the what-if summaries in
tasks/core/replay_summary.py.

Output: `decision_line(d)` -> `{"at", "model", "tag", "action", "until", "ladder_step"}`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.policy import PolicyConfig
from tasks.core.replay_input import ReplayHistory, iso, parse_replay
from tasks.core.types import Decision, EndpointState


def replay_history(history: ReplayHistory, cfg: PolicyConfig) -> list[Decision]:
    """Fold `settle_policy` (the function a live round settles with) over the rounds; each model has its
    own states, and the exclusion layers in force and the mode are the ones the input lines recorded (the
    configured mode where a line records none)."""
    from tasks.core.settle import Prior, settle_policy

    states: dict[str, dict[str, EndpointState]] = defaultdict(dict)
    decisions: list[Decision] = []
    for r in history.rounds:
        prior = Prior(model=r.model, mode=r.mode or cfg.mode, states=states[r.model])
        states[r.model], made = settle_policy(prior, r.round_id, r.round_ts, r.statuses,
                                              r.discovered or tuple(r.statuses), cfg, excluded=r.excluded)
        decisions.extend(made)
    return decisions


def replay(lines: Iterable[str | Mapping[str, Any]] | ReplayHistory, cfg: CanaryConfig | PolicyConfig
           ) -> list[Decision]:
    """Parse (unless already parsed) and replay. Raises ReplayInputError naming the first bad line."""
    history = lines if isinstance(lines, ReplayHistory) else parse_replay(lines)
    pcfg = cfg if isinstance(cfg, PolicyConfig) else PolicyConfig.from_config(cfg)
    return replay_history(history, pcfg)


def decision_line(d: Decision) -> dict[str, Any]:
    """One output line of `canary replay`."""
    return {"at": iso(d.at), "model": d.model, "tag": d.tag, "action": str(d.action),
            "until": iso(d.until) if d.until else None, "ladder_step": d.ladder_step}
