"""The dead-man automation's rules (pure): how long a silence of the cycle deployment lasts before Prefect's server
says so, and what it says. tasks/orchestration/deadman_automation.py turns them into the automation.

The window is the dead-man's own (tasks/core/deadman.py: SILENT_INTERVALS round intervals, 60 min at the default
`interval_min` of 30): one missed cycle can be a slow cycle, two cannot.
"""

from __future__ import annotations

from datetime import timedelta

from tasks.core.deadman import SILENT_INTERVALS

#: Prefect refuses a Proactive trigger whose window is shorter (its own validation); only a test's interval is.
PROACTIVE_MIN_WITHIN = timedelta(seconds=10)
#: The automation's name: `<cycle deployment>-silent` (canary-cycle-silent; a shard's canary-cycle-shard-a-silent).
NAME_SUFFIX = "-silent"


def silence_window(interval: timedelta) -> timedelta:
    """No completed cycle within this long is a silence: SILENT_INTERVALS intervals (at least Prefect's minimum)."""
    if interval <= timedelta(0):
        raise ValueError(f"interval must be positive (got {interval})")
    return max(SILENT_INTERVALS * interval, PROACTIVE_MIN_WITHIN)


def automation_name(deployment: str) -> str:
    return f"{deployment}{NAME_SUFFIX}"


def duration_words(window: timedelta) -> str:
    """`60 min`, or `12 s` for a window of a test's interval."""
    seconds = int(window.total_seconds())
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def silence_text(deployment: str, window: timedelta) -> str:
    """The Slack text Prefect's server posts when no run of `deployment` completed within `window` (plain text
    with Slack's `*bold*` and backticks; fixed when the automation is applied, so it needs no template). It names
    the deployment, not models: a shard's deployment runs the models its parameters give."""
    return (
        f":rotating_light: *The canary is silent:* no run of `{deployment}` completed in the last "
        f"{duration_words(window)} ({SILENT_INTERVALS} round intervals). Nothing of it is probed: no suspension "
        "starts or ends early and its ignore lists are not refreshed.\n"
        "Prefect's server sent this itself, so it arrives with `canary serve` (or the work pool's worker) down. "
        f"*What to do:* check that process and the Prefect server (`prefect flow-run ls --flow-name canary-cycle`), "
        "then run one cycle by hand (`canary run`). This repeats every window until a cycle completes; to stop it "
        f"while you work, `prefect automation pause {automation_name(deployment)}`."
    )
