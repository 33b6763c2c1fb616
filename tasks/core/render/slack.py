"""Slack alerts (plain text + Block Kit) for policy decisions; pure, like the rest of tasks/render.

Each alert says what happened, shows the evidence, says what to do (the exact `canary ...` command) and ends
with a digest of the model's ignore list. Outside text goes through `text.clean()`.
Alert keys are stable idempotency keys: `decisions|<round id>` and `thread|<parent key>|<round id>` (a round's
decisions: tasks/core/render/decision_groups.py), `Decision.decision_id` (an admin's lift without a thread),
`probe_weak|model|round_id`, `pin_mismatch|model|tag|round_id`, `deadman|model|<last complete round ts or never>`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tasks.core.render.text import (
    ENFORCE_CMD,
    cap_text,
    clean,
    code,
    exclude_cmd,
    fmt_ts,
    lift_cmd,
    mrkdwn,
    name,
)
from tasks.core.types import Action, Alert, Decision, IgnoreList

EVIDENCE_CAP = 300  # characters of one evidence line
EVIDENCE_LINES_PER_ALERT = 6
SECTION_CAP = 3000  # Slack's limit for a section's text
HEADER_CAP = 150  # Slack's limit for a header's text
DIGEST_ENTRIES = 30


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """One piece of evidence behind a decision: which contract said what, and a bit of the bad reply."""

    contract: str
    reason: str
    evidence: str = ""  # Gatus-style resolved value, e.g. "ttft_ms (12400) > 10000"
    excerpt: str = ""  # the start of the reply that broke the contract
    round_id: str | None = None


def digest(model: str, ignore_list: IgnoreList | None) -> str:
    """One line: the model's current ignore list with each entry's layer (and end, if any)."""
    if ignore_list is None:
        return f"Ignore list for {name(model, 'slack')}: unknown"
    if not ignore_list.entries:
        return f"Ignore list for {name(model, 'slack')}: empty"
    parts = []
    for e in ignore_list.entries[:DIGEST_ENTRIES]:
        until = f" until {fmt_ts(e.until)}" if e.until else ""
        parts.append(f"{name(e.tag, 'slack')} ({e.layer}{until})")
    more = len(ignore_list.entries) - DIGEST_ENTRIES
    tail = f" and {more} more" if more > 0 else ""
    return f"Ignore list for {name(model, 'slack')} ({len(ignore_list.ignore)}): " + ", ".join(parts) + tail


def parse_blocks(blocks_json: str) -> list[Any]:
    """An alert's Block Kit blocks as a list (empty when they are not a JSON list)."""
    try:
        blocks = json.loads(blocks_json)
    except ValueError:
        return []
    return blocks if isinstance(blocks, list) else []


def build_alert(
    *, key: str, kind: str, model: str, tag: str | None, created_at: datetime, title: str,
    sections: Sequence[str], digest_line: str, thread_key: str | None = None,
) -> Alert:
    """Assemble one alert: a header, mrkdwn sections, and the ignore-list digest as a context line (`thread_key`:
    posted in that alert's thread)."""
    header = {"type": "plain_text", "text": clean(title, HEADER_CAP)}
    blocks: list[dict[str, object]] = [{"type": "header", "text": header}]
    for section in sections:
        if section:
            body = {"type": "mrkdwn", "text": cap_text(section, SECTION_CAP)}
            blocks.append({"type": "section", "text": body})
    context = {"type": "mrkdwn", "text": cap_text(digest_line, SECTION_CAP)}
    blocks.append({"type": "context", "elements": [context]})
    text = "\n".join([mrkdwn(clean(title, HEADER_CAP)), *(s for s in sections if s), digest_line])
    return Alert(
        key=key, created_at=created_at, kind=kind, model=model, tag=tag, text=text,
        blocks_json=json.dumps(blocks, ensure_ascii=False, separators=(",", ":")), thread_key=thread_key,
    )


# --- decisions ------------------------------------------------------------------------------------------

TITLES: dict[Action, str] = {
    Action.SUSPEND: "Suspended",
    Action.WOULD_SUSPEND: "Would suspend (observe mode)",
    Action.RESTORE: "Restored",
    Action.WOULD_RESTORE: "Would restore (observe mode)",
    Action.EXPIRE: "Suspension expired",
    Action.WOULD_EXPIRE: "Suspension would expire (observe mode)",
    Action.LIFT: "Suspension lifted",
    Action.WOULD_LIFT: "Shadow suspension lifted (observe mode)",
    Action.FLOOR_BLOCKED: "Suspension blocked by the capacity floor",
}


def _what_happened(d: Decision) -> str:
    where = f"{name(d.tag, 'slack')} on {name(d.model, 'slack')}"
    if d.action in (Action.SUSPEND, Action.WOULD_SUSPEND):
        verb = "is out of traffic" if d.action is Action.SUSPEND else "would be out of traffic"
        return f"{where} {verb} until {fmt_ts(d.until)} (ladder step {d.ladder_step})."
    if d.action in (Action.RESTORE, Action.WOULD_RESTORE):
        verb = "is back in traffic" if d.action is Action.RESTORE else "would be back in traffic"
        return f"{where} {verb} after consecutive clean rounds."
    if d.action in (Action.EXPIRE, Action.WOULD_EXPIRE):
        return f"The suspension of {where} ended at {fmt_ts(d.at)}; it keeps being probed."
    if d.action in (Action.LIFT, Action.WOULD_LIFT):
        return f"The suspension of {where} was lifted by {code(d.actor, 80)}."
    return f"{where} failed enough rounds to be suspended, but too few routable hosts would remain."


def _what_to_do(d: Decision) -> str:
    lift, exclude = lift_cmd(d.tag, d.model), exclude_cmd(d.tag, d.model)  # code spans, never cut
    if d.action is Action.SUSPEND:
        return f"*What to do:* nothing if the evidence holds. If it is a false positive: {lift}"
    if d.action is Action.WOULD_SUSPEND:
        return (f"*What to do:* observe mode changed nothing. To exclude it now: {exclude}; "
                f"to let the canary act on such findings: `{ENFORCE_CMD}`")
    if d.action is Action.FLOOR_BLOCKED:
        return (f"*What to do:* decide by hand; the canary will suspend it as soon as the floor allows. "
                f"To exclude it anyway: {exclude}")
    return f"*What to do:* nothing. To keep it out of traffic anyway: {exclude}"


def _evidence_section(lines: Sequence[EvidenceLine], cap: int = EVIDENCE_LINES_PER_ALERT) -> str:
    if not lines:
        return ""
    out = ["*Evidence*"]
    for line in lines[:cap]:
        head = f"• {code(line.round_id, 80)} " if line.round_id else "• "
        item = f"{head}{mrkdwn(clean(line.contract, 40))} {code(line.reason, 80)}"
        if line.evidence:
            item += f": {mrkdwn(clean(line.evidence, EVIDENCE_CAP))}"
        if line.excerpt:
            item += f"; reply: {code(line.excerpt)}"
        out.append(item)
    if len(lines) > cap:
        out.append(f"… and {len(lines) - cap} more")
    return "\n".join(out)


def decision_title(d: Decision) -> str:
    """`Suspended: <tag> on <model>` (plain text: a header, a log line)."""
    return f"{TITLES[d.action]}: {name(d.tag, 'log', 60)} on {name(d.model, 'log', 60)}"


def decision_sections(d: Decision, evidence: Sequence[EvidenceLine] = (), evidence_lines: int | None = None
                      ) -> list[str]:
    """What happened (with the reason and the evidence rounds), the evidence, what to do: one decision's sections."""
    facts = [_what_happened(d)]
    if d.reason:
        facts.append(f"Reason: {mrkdwn(clean(d.reason, EVIDENCE_CAP))}")
    if d.evidence_round_ids:
        facts.append("Rounds: " + ", ".join(code(r, 80) for r in d.evidence_round_ids))
    return ["\n".join(facts), _evidence_section(evidence, evidence_lines or EVIDENCE_LINES_PER_ALERT), _what_to_do(d)]


def render_decision_alert(
    decision: Decision, ignore_list: IgnoreList | None = None, evidence: Sequence[EvidenceLine] = ()
) -> Alert:
    d = decision
    return build_alert(
        key=d.decision_id, kind=str(d.action), model=d.model, tag=d.tag, created_at=d.at,
        title=decision_title(d), digest_line=digest(d.model, ignore_list), sections=decision_sections(d, evidence),
    )
