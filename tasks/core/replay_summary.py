"""What-if summaries of a replay: what one setting of the policy does to a recorded history."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from tasks.config import CanaryConfig
from tasks.core.replay import replay
from tasks.core.replay_input import ReplayHistory
from tasks.core.types import Decision

_STARTS = {"suspend", "would_suspend"}
_ENDS = {"expire", "restore", "lift", "would_expire", "would_restore", "would_lift"}


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """What one setting does to a history. Endpoint-hours run from each (would-)suspension to the
    decision that ended it, or to the last round of the history if none did."""

    label: str
    rounds: int
    suspensions: int
    endpoints_suspended: int
    suspended_endpoint_hours: float
    floor_blocks: int
    restores: int
    expiries: int
    lifts: int

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def summarize(decisions: Iterable[Decision], history: ReplayHistory, label: str = "baseline"
              ) -> ReplaySummary:
    counts: dict[str, int] = defaultdict(int)
    opened: dict[tuple[str, str], datetime] = {}
    suspended: set[tuple[str, str]] = set()
    seconds = 0.0
    for d in decisions:
        action, key = str(d.action), (d.model, d.tag)
        counts[action.removeprefix("would_")] += 1
        if action in _ENDS and key in opened:
            seconds += (d.at - opened.pop(key)).total_seconds()
        if action in _STARTS:
            opened[key] = d.at
            suspended.add(key)
    end = history.end
    seconds += sum((end - start).total_seconds() for start in opened.values()) if end else 0.0
    return ReplaySummary(label, len(history.rounds), counts["suspend"], len(suspended),
                         round(seconds / 3600, 2), counts["floor_blocked"], counts["restore"],
                         counts["expire"], counts["lift"])


@dataclass(frozen=True, slots=True)
class Variant:
    """One setting to replay beside the baseline: its config, a label (the overrides, `k=v ...`), and whether it
    sets the mode (then every round is replayed in it, not in the mode its lines recorded).
    `tasks.config.loading.variant(base, overrides)` builds one from `--set`-style overrides."""

    label: str
    cfg: CanaryConfig
    sets_mode: bool = False


def what_if(history: ReplayHistory, base: CanaryConfig, variants: Iterable[Variant] = (), *,
            label: str = "baseline") -> list[ReplaySummary]:
    """The base setting (`base`, its row labelled `label`) and each variant replayed over one history."""
    out = [summarize(replay(history, base), history, label)]
    for v in variants:
        replayed = history.in_mode(v.cfg.mode) if v.sets_mode else history
        out.append(summarize(replay(replayed, v.cfg), history, v.label))
    return out


def format_summaries(summaries: Iterable[ReplaySummary]) -> list[str]:
    """A small aligned table, one line per setting (the CLI prints it on stderr or with --summary)."""
    rows = [("setting", "rounds", "suspensions", "endpoints", "endpoint_hours", "floor_blocks", "restores",
             "expiries", "lifts")]
    rows += [(s.label, str(s.rounds), str(s.suspensions), str(s.endpoints_suspended),
              f"{s.suspended_endpoint_hours:.1f}", str(s.floor_blocks), str(s.restores), str(s.expiries),
              str(s.lifts)) for s in summaries]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(r[i].ljust(w) if i == 0 else r[i].rjust(w) for i, w in enumerate(widths)) for r in rows]
