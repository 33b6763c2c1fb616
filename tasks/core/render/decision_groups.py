"""A round's decisions as Slack messages (pure): one message per model and round, and each suspension's later
events in the thread of the message that announced it.

    out = round_messages(model, round_id, at, decisions, threads, ignore, evidence)
    out.alerts     # the round's message (new suspensions, floor blocks, ...) and one follow-up per earlier thread
    out.threads    # decision_id -> the key of the message whose thread follows that suspension

`threads` maps each endpoint whose suspension was announced in a message to that message's key (the store reads
it from `decisions.thread_key`). A decision about such an endpoint (restored, expired, lifted, suspended again one
ladder step up: `escalate`) goes in that thread; every other decision of the round goes in the round's message,
and a suspension announced there is followed in its thread. Keys: `decisions|<round id>` for the round's message,
`thread|<thread key>|<round id or decision id>` for a follow-up. When a follow-up is posted, delivery updates
the parent with `ended_parent` (`chat.update`): one line per event at the top, so the channel shows how each
suspension ended without opening the thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tasks.core.render.slack import (
    SECTION_CAP,
    TITLES,
    EvidenceLine,
    build_alert,
    decision_sections,
    decision_title,
    digest,
    parse_blocks,
)
from tasks.core.render.text import cap_text, fmt_ts, name
from tasks.core.types import Action, Alert, Decision, IgnoreList

GROUP_PREFIX = "decisions|"
THREAD_PREFIX = "thread|"
#: Evidence lines per decision in a message that holds several (one decision alone shows EVIDENCE_LINES_PER_ALERT).
GROUP_EVIDENCE_LINES = 2
#: A decision that opens a suspension: its message's thread follows it.
OPENS = frozenset({Action.SUSPEND, Action.WOULD_SUSPEND})
_ENDS = frozenset({Action.EXPIRE, Action.WOULD_EXPIRE})
#: Short words for a message's title: "acme/m: 2 suspended, 1 held back by the floor".
_COUNTED: Mapping[Action, str] = {
    Action.SUSPEND: "suspended", Action.WOULD_SUSPEND: "would be suspended", Action.RESTORE: "restored",
    Action.WOULD_RESTORE: "would be restored", Action.EXPIRE: "expired", Action.WOULD_EXPIRE: "would expire",
    Action.LIFT: "lifted", Action.WOULD_LIFT: "shadow lifted", Action.FLOOR_BLOCKED: "held back by the floor",
}
PARENT_BLOCK_ID = "canary-since"


@dataclass(frozen=True)
class RoundMessages:
    alerts: tuple[Alert, ...] = ()
    threads: Mapping[str, str] = field(default_factory=dict)  # decision_id -> thread key


def group_key(round_id: str) -> str:
    return GROUP_PREFIX + round_id


def follow_up_key(thread_key: str, occasion: str) -> str:
    return f"{THREAD_PREFIX}{thread_key}|{occasion}"


def round_messages(
    model: str, round_id: str, decisions: Sequence[Decision], threads: Mapping[str, str],
    ignore: IgnoreList | None = None, evidence: Mapping[str, Sequence[EvidenceLine]] | None = None,
) -> RoundMessages:
    """The round's decisions of `model` as messages (module docstring); none when it decided nothing."""
    evidence = evidence or {}
    top: list[Decision] = []
    follow: dict[str, list[Decision]] = {}
    thread_of: dict[str, str] = {}
    for d in decisions:
        thread = threads.get(d.tag)
        if thread is not None:
            follow.setdefault(thread, []).append(d)
            thread_of[d.decision_id] = thread  # an escalation stays in its suspension's thread
        else:
            top.append(d)
            if d.action in OPENS:
                thread_of[d.decision_id] = group_key(round_id)
    alerts = []
    if top:
        alerts.append(_message(group_key(round_id), model, top, ignore, evidence, None))
    for thread, ds in follow.items():
        alerts.append(_message(follow_up_key(thread, round_id), model, ds, ignore, evidence, thread))
    return RoundMessages(tuple(alerts), thread_of)


def decision_messages(decisions: Sequence[Decision], threads: Mapping[str, str],
                      ignore_lists: Mapping[str, IgnoreList] | None = None) -> RoundMessages:
    """Decisions made outside a round (an admin's `canary lift`): each in its suspension's thread when it has one,
    else its own message keyed by its decision id."""
    alerts, thread_of = [], {}
    for d in decisions:
        ignore = (ignore_lists or {}).get(d.model)
        thread = threads.get(d.tag)
        key = follow_up_key(thread, d.decision_id) if thread else d.decision_id
        alerts.append(_message(key, d.model, [d], ignore, {}, thread))
        if thread:
            thread_of[d.decision_id] = thread
    return RoundMessages(tuple(alerts), thread_of)


def _escalated(ds: Sequence[Decision]) -> bool:
    """One endpoint's suspension expired and it was suspended again in the same round (one ladder step up)."""
    actions = {d.action for d in ds}
    return len({d.tag for d in ds}) == 1 and bool(actions & _ENDS) and bool(actions & OPENS)


def _title(model: str, ds: Sequence[Decision]) -> str:
    if len(ds) == 1:
        return decision_title(ds[0])
    if _escalated(ds):
        opened = next(d for d in ds if d.action in OPENS)
        verb = "Suspended again" if opened.action is Action.SUSPEND else "Would be suspended again (observe mode)"
        return f"{verb}: {name(opened.tag, 'log', 60)} on {name(model, 'log', 60)}"
    counts: dict[Action, int] = {}
    for d in ds:
        counts[d.action] = counts.get(d.action, 0) + 1
    return f"{name(model, 'log', 60)}: " + ", ".join(f"{n} {_COUNTED[a]}" for a, n in counts.items())


def _kind(ds: Sequence[Decision]) -> str:
    if _escalated(ds):
        return "would_escalate" if any(d.action is Action.WOULD_SUSPEND for d in ds) else "escalate"
    actions = {str(d.action) for d in ds}
    return actions.pop() if len(actions) == 1 else "decisions"


def _message(key: str, model: str, ds: Sequence[Decision], ignore: IgnoreList | None,
             evidence: Mapping[str, Sequence[EvidenceLine]], thread: str | None) -> Alert:
    if len(ds) == 1:
        sections = decision_sections(ds[0], evidence.get(ds[0].tag, ()))
    else:
        sections = [cap_text(f"*{TITLES[d.action]}*\n" + "\n".join(
            s for s in decision_sections(d, evidence.get(d.tag, ()), GROUP_EVIDENCE_LINES) if s), SECTION_CAP)
            for d in ds]
    tags = {d.tag for d in ds}
    return build_alert(
        key=key, kind=_kind(ds), model=model, tag=tags.pop() if len(tags) == 1 else None,
        created_at=max(d.at for d in ds), title=_title(model, ds), digest_line=digest(model, ignore),
        sections=sections, thread_key=thread,
    )


def ending_line(follow_up: Alert) -> str:
    """`• <time>: <its title>`: one line of the parent's "since then" list."""
    title = follow_up.text.split("\n", 1)[0]
    return f"• {fmt_ts(follow_up.created_at)}: {title}"


def ended_parent(parent: Alert, follow_ups: Sequence[Alert]) -> Alert:
    """The parent as `chat.update` rewrites it: its header, then what happened since (one line per follow-up
    posted in its thread, oldest first), then the rest of it as first posted."""
    if not follow_ups:
        return parent
    lines = "\n".join(ending_line(f) for f in sorted(follow_ups, key=lambda a: (a.created_at, a.key)))
    since = cap_text(f"*Since then (in the thread):*\n{lines}", SECTION_CAP)
    blocks = [b for b in parse_blocks(parent.blocks_json)
              if not (isinstance(b, dict) and b.get("block_id") == PARENT_BLOCK_ID)]
    at = 1 if blocks and isinstance(blocks[0], dict) and blocks[0].get("type") == "header" else 0
    blocks.insert(at, {"type": "section", "block_id": PARENT_BLOCK_ID, "text": {"type": "mrkdwn", "text": since}})
    head, _, rest = parent.text.partition("\n")
    return replace(parent, text=f"{head}\n{since}\n{rest}" if rest else f"{head}\n{since}",
                   blocks_json=json.dumps(blocks, ensure_ascii=False, separators=(",", ":")))

