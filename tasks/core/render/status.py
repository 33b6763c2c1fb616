"""`canary status` as text: what traffic avoids first, then the mode, the spend, the rounds and the endpoints.

Pure: it renders the report `canary status --json` prints (provider_canary/cli/admin_read.py builds it), so the text
never says what the JSON does not. Order (issue 30: observe mode read like enforcement):

    mode: observe: ... (`canary mode enforce` to ...)        the header, with the command that changes it
    excluded now (what traffic avoids ...):                   per model, each tag and the layer that excludes it
    shadow decisions (observe mode: not in traffic):          "would suspend until ...", never "suspended"
    canary spend: today ...; last 7 days ...; projected ...   one line (per day and per model: --json)
    round ... / alerts ...                                     the recent rounds and the outbox's troubles
    alerts: WARNING: Slack is not configured ...               when this environment has no Slack settings
    the endpoint table, then its legend
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tasks.core.cost import CostTotals, describe_totals, format_usd
from tasks.core.policy_records import EndpointState
from tasks.core.render.text import name
from tasks.core.types import Mode

#: The command that turns the mode the other way, and what each mode means for traffic.
MODE_HEADERS = {
    "enforce": "mode: enforce: the canary's suspensions keep endpoints out of traffic (to decide without acting: "
               "`canary mode observe`)",
    "observe": "mode: observe: the canary's decisions are shadow only and keep nothing out of traffic (to act on "
               "them: `canary mode enforce`)",
}
#: What the table's uptime column means (printed under it).
UPTIME_LEGEND = (
    "OpenRouter uptime: its own figures for the endpoint from the latest round's listing (shown, never a verdict):"
    " the share of its requests that succeeded over the last 5 min / 30 min / 1 day, in %; sN = the listing's"
    " status N (0 healthy, negative degraded); - = not given"
)


def policy_label(state: EndpointState | None, now: datetime) -> str:
    """What the policy holds for one endpoint, in words that say whether it acts: `suspended` only in enforce
    mode; the observe (shadow) machine's states are `would ...`."""
    if state is None:
        return "unknown"  # no round has judged it
    shadow = state.mode is Mode.OBSERVE
    if state.suspended_until is not None:
        if state.suspended_until <= now:
            return "would expire" if shadow else "expiring"  # the next round ends it
        return "would suspend" if shadow else "suspended"
    if state.floor_blocked:
        return "would be floor-blocked" if shadow else "floor-blocked"
    return "failing" if state.fail_streak else "ok"


def _when(iso: str | None) -> str:
    return iso[:16].replace("T", " ") + " UTC" if iso else ""


def excluded_lines(excluded: Sequence[Mapping[str, Any]], models: Sequence[str]) -> list[str]:
    lines = ["excluded now (what traffic avoids: the published ignore list, `canary ignore-list`):"]
    for model in models:
        mine = [e for e in excluded if e["model"] == model]
        shown = ", ".join(
            f"{name(e['tag'], 'log', 60)} ({e['layer']}{' until ' + _when(e['until']) if e['until'] else ''})"
            for e in mine
        )
        lines.append(f"  {name(model, 'log', 80)}: {shown or 'nothing'}")
    return lines


def shadow_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    shadow = [r for r in rows if r["shadow"] and r["policy"] == "would suspend"]
    if not shadow:
        return []
    lines = ["shadow decisions (observe mode: not in traffic):"]
    for model in dict.fromkeys(r["model"] for r in shadow):
        shown = ", ".join(f"{name(r['tag'], 'log', 60)} would be suspended until {_when(r['suspended_until'])}"
                          for r in shadow if r["model"] == model)
        lines.append(f"  {name(model, 'log', 80)}: {shown}")
    return lines


def _totals(t: Mapping[str, Any]) -> CostTotals:
    return CostTotals(**{k: t[k] for k in CostTotals.__dataclass_fields__})


def spend_line(spend: Mapping[str, Any]) -> str:
    """One line: today, the last days together, the projection against the budget."""
    budget = spend["budget_usd_per_day"]
    limit = f"budget {format_usd(budget)}/day" if budget else "no budget: budget_usd_per_day = 0"
    week = sum(d["usd"] for d in spend["days"])
    return (f"canary spend: today {describe_totals(_totals(spend['today']))}; last {len(spend['days'])} days "
            f"{format_usd(week)}; projected {format_usd(spend['projected_usd_per_day'])}/day ({limit}); "
            "per day and model: --json")


def uptimes(signals: Mapping[str, Any] | None) -> str:
    """`5m/30m/1d` uptimes in percent and the listing's status, `-` where OpenRouter gave none."""
    if not signals:
        return "-"
    cells = [f"{v:.1f}" if v is not None else "-" for v in
             (signals.get("uptime_last_5m"), signals.get("uptime_last_30m"), signals.get("uptime_last_1d"))]
    status = signals.get("status")
    return "/".join(cells) + (f" s{status}" if status else "")


def table_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [f"{'model':<36} {'tag':<22} {'traffic':<9} {'policy':<14} {'fail':>4} {'clean':>5}  {'until':<17} "
             f"{'OpenRouter uptime 5m/30m/1d':<28} excluded by"]
    for r in rows:
        until = _when(r["suspended_until"]).removesuffix(" UTC") or "-"
        lines.append(
            f"{name(r['model'], 'log', 80):<36} {name(r['tag'], 'log', 60):<22} "
            f"{'routable' if r['in_traffic'] else 'excluded':<9} {r['policy']:<14} {r['fail_streak']:>4} "
            f"{r['clean_streak']:>5}  {until:<17} {uptimes(r['openrouter']):<28} {', '.join(r['excluded_by']) or '-'}"
        )
    return [*lines, UPTIME_LEGEND]


def status_lines(report: Mapping[str, Any], models: Sequence[str], *, round_lines: Sequence[str] = ()) -> list[str]:
    """The whole text of `canary status` from its JSON report; `round_lines`: the rounds and the outbox's lines."""
    return [
        MODE_HEADERS.get(str(report["mode"]), f"mode: {report['mode']}"),
        *excluded_lines(report["excluded_now"], models),
        *shadow_lines(report["endpoints"]),
        spend_line(report["spend"]),
        *round_lines,
        *([f"alerts: WARNING: {report['slack_warning']}"] if report.get("slack_warning") else []),
        *table_lines(report["endpoints"]),
    ]
