"""A `canary at` report as readable text: the suspects first, then what was excluded at T, then the details."""

from __future__ import annotations

import json
from datetime import datetime

from tasks.at.records import Report


def _onset(since: datetime | None) -> str:
    return f"failing since {since:%m-%d %H:%M}, " if since else ""


def _when(ts: datetime | None) -> str:
    return ts.strftime("%m-%d %H:%M") if ts else "-"


def format_report(r: Report) -> str:
    """Readable text: the suspects first, then what was excluded at T, then the details."""
    return "\n".join([*_head(r), *_endpoint_lines(r), *_decision_lines(r), *_exclusion_change_lines(r),
                      *_suspicion_lines(r), *_route_event_lines(r)])


def _head(r: Report) -> list[str]:
    """The window, the notes, the suspects, and what was excluded at T."""
    by_tag = {e.tag: e for e in r.endpoints}
    lines = [
        f"{r.model} around {r.time:%Y-%m-%d %H:%M} UTC "
        f"(rounds {r.since:%m-%d %H:%M} .. {r.until:%m-%d %H:%M}, {len(r.round_ids)} rounds, nearest "
        f"{r.nearest_round or '-'})",
        *[f"note: {n}" for n in r.notes],
        "",
        "Suspects (most recent onset first): "
        + (
            ", ".join(
                f"{e.tag} ({_onset(e.failing_since)}{e.failing_rounds} fail, "
                f"{e.statuses.get('transport', 0)} transport)"
                for e in (by_tag[tag] for tag in r.suspects)
            )
            or "none"
        ),
        f"Ignore list in force at T: {json.dumps(list(r.ignore_at_t))}",
    ]
    for entry in r.in_force:
        until = f" until {_when(entry.until)}" if entry.until else ""
        since = f" since {_when(entry.since)}" if entry.since else ""
        lines.append(f"  {entry.tag:<18} {entry.layer:<12}{since}{until}  {entry.reason}")
    return lines


def _endpoint_lines(r: Report) -> list[str]:
    lines = ["", "Endpoints probed:"]
    for e in r.endpoints:
        counts = " ".join(f"{k}={v}" for k, v in sorted(e.statuses.items()))
        lines.append(f"  {e.tag:<18} {e.provider_name:<15} at T: {e.status_at_t or '-':<12} {counts}")
        for fd in e.findings:
            lang = f" [{fd.language}]" if fd.language else ""
            lines.append(
                f"      {_when(fd.round_ts)} {fd.contract}{lang} {fd.outcome} {fd.reason}: {fd.evidence}"
            )
            if fd.excerpt:
                lines.append(f"        reply: {fd.excerpt!r}")
        if e.more_findings:
            lines.append(f"      ... {e.more_findings} more")
    return lines


def _decision_lines(r: Report) -> list[str]:
    if not r.decisions:
        return []
    lines = ["", "Decisions in the window:"]
    for d in r.decisions:
        until = f" until {_when(d.get('until'))}" if d.get("until") else ""
        lines.append(
            f"  {_when(d['decided_at'])} {d['action']:<14} {d['tag']}{until}  {d.get('reason') or ''}"
        )
    return lines


def _exclusion_change_lines(r: Report) -> list[str]:
    if not r.exclusion_changes:
        return []
    lines = ["", "Operational exclusion changes in the window:"]
    for c in r.exclusion_changes:
        removed = (
            f", removed {_when(c.get('removed_at'))} ({c.get('removed_reason')})"
            if c.get("removed_at")
            else ""
        )
        lines.append(
            f"  {c['tag']:<18} added {_when(c['added_at'])} by {c.get('who')}{removed}: {c['reason']}"
        )
    return lines


def _suspicion_lines(r: Report) -> list[str]:
    lines = ["", "Suspicions (live traffic, OpenRouter's uptime; only pinned probes decide): "
             + (str(len(r.suspicions)) if r.suspicions else "none")]
    for sp in r.suspicions:
        by = f" by {sp['confirm_round_id']} ({sp['round_status']})" if sp.get("confirm_round_id") else ""
        note = f"; {sp['note']}" if sp.get("note") else ""
        lines.append(f"  {_when(sp.get('detected_at'))} {sp['tag']:<18} {sp['signal']}: {sp['evidence']} -> "
                     f"{sp['status']}{by}{note}")
    return lines


def _route_event_lines(r: Report) -> list[str]:
    lines = ["", f"Route events for {r.model}: " + (str(len(r.route_events)) if r.route_events else "none")]
    for ev in r.route_events:
        lines.append(
            f"  {_when(ev.get('event_at'))} tier {ev.get('tier')} {ev.get('reason')} {ev.get('upstream')}"
        )
    return lines
