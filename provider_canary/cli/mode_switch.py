"""What a mode switch did, as lines for stdout and one alert for the outbox (pure)."""

from __future__ import annotations

from datetime import datetime

from tasks.core.types import Alert, Decision, Mode


def _until(ts: datetime | None) -> str:
    return f"{ts:%Y-%m-%d %H:%M UTC}" if ts else "-"


def mode_switch_lines(target: Mode, previous: str, dropped: list[Decision]) -> list[str]:
    """What a mode switch did, one line each: every suspension released (to observe) or not reinstated."""
    if previous == target.value and not dropped:
        return [f"mode was already {target.value}: nothing changed"]
    if target is Mode.OBSERVE:
        lines = [
            f"mode is now observe (was {previous}): would_* decisions only;"
            " the canary layer publishes nothing"
        ]
        lines += [
            f"released {d.model} {d.tag} (was suspended until {_until(d.until)}, ladder step {d.ladder_step})"
            for d in dropped
        ]
        lines.append(f"{len(dropped)} canary suspension(s) released; builtin and operational exclusions stay")
    else:
        lines = [f"mode is now enforce (was {previous}): new suspensions reach the ignore list"]
        lines += [
            f"not reinstated {d.model} {d.tag} (shadow suspension until {_until(d.until)}):"
            " the next rounds decide"
            for d in dropped
        ]
        lines.append(
            "0 suspensions reinstated: a shadow suspension never turns real, and suspensions released by an"
            " earlier switch to observe do not come back; the next failing rounds suspend endpoints again"
        )
    return lines


def mode_switch_alert(target: Mode, who: str, lines: list[str], models: list[str], now: datetime) -> Alert:
    """One alert for the whole switch (not one per released suspension)."""
    text = f"Canary mode switched to {target.value} by {who}.\n" + "\n".join(lines[1:])
    return Alert(
        key=f"mode-switch:{target.value}:{now.isoformat()}",
        created_at=now,
        kind="mode_switch",
        model=",".join(models),
        tag=None,
        text=text,
    )
