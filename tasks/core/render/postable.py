"""Make an alert postable (pure): Slack's size limits applied at delivery time; the outbox keeps it whole.

Slack's limits (chat.postMessage and Block Kit reference; slack-sdk's block models check the same):
the message `text` should stay under 4,000 characters (longer is truncated, past 40,000 refused with
`msg_too_long`); at most 50 blocks; a header's text 150 characters; a section's text 3,000 (10 fields of
2,000); a context block 10 elements of 2,000 (we keep 3,000 for mrkdwn text objects in sections only); and
Slack refuses a message whose blocks hold too much text altogether (`msg_blocks_too_long`, seen at ~13,000
characters), so the blocks' text is kept under `BLOCKS_TEXT_CAP`. A message that is cut says so and names
the outbox row that holds all of it.

`fallback_alert` is the alert about an alert Slack refused for good: short plain text, no blocks, so no
size or block rule can refuse it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from tasks.core.render.text import cap_text, clean, name
from tasks.core.types import Alert

TEXT_CAP = 4000
MAX_BLOCKS = 50
HEADER_CAP = 150
SECTION_CAP = 3000
FIELD_CAP = 2000
MAX_FIELDS = 10
CONTEXT_ELEMENT_CAP = 2000
MAX_CONTEXT_ELEMENTS = 10
BLOCKS_TEXT_CAP = 12000
#: An alert key longer than this travels (message metadata, logs) as its start plus a hash of the whole.
KEY_CAP = 200
FALLBACK_KIND = "delivery_failed"


def post_key(key: str) -> str:
    """The key as it travels in the message metadata: itself, or its start + `#` + a hash when too long."""
    if len(key) <= KEY_CAP:
        return key
    return key[: KEY_CAP - 17] + "#" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _cut_note(alert: Alert) -> str:
    return f"\n… (cut to fit Slack; the whole alert is in the alerts table, key {name(post_key(alert.key), 'slack')})"


def postable(alert: Alert) -> Alert:
    """`alert` with its text and blocks inside Slack's limits (unchanged when they already are)."""
    text = alert.text
    if len(text) > TEXT_CAP:
        note = _cut_note(alert)
        text = cap_text(text, TEXT_CAP - len(note)) + note
    return replace(alert, text=text, blocks_json=_postable_blocks(alert))


def _postable_blocks(alert: Alert) -> str:
    try:
        blocks = json.loads(alert.blocks_json)
    except ValueError:
        return "[]"  # the plain text goes alone
    if not isinstance(blocks, list):
        return "[]"
    out: list[Any] = []
    budget = BLOCKS_TEXT_CAP
    for block in blocks:
        if len(out) >= MAX_BLOCKS - 1 or budget <= 0:
            break
        capped = _cap_block(block, budget)
        if capped is None:
            continue
        out.append(capped)
        budget -= _text_len(capped)
    if len(out) < len(blocks):
        note = cap_text(_cut_note(alert).strip(), CONTEXT_ELEMENT_CAP)
        out.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]})
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _cap_obj(obj: Any, cap: int) -> Any:
    """A text object with its text capped (anything else is dropped: Slack would refuse it)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        return None
    return {**obj, "text": cap_text(obj["text"], max(1, cap))}


def _cap_block(block: Any, budget: int) -> dict[str, Any] | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return None
    kind = block["type"]
    if kind == "header":
        text = _cap_obj(block.get("text"), min(HEADER_CAP, budget))
        return None if text is None else {**block, "text": text}
    if kind == "section":
        out = dict(block)
        if "text" in block:
            text = _cap_obj(block["text"], min(SECTION_CAP, budget))
            if text is None:
                return None
            out["text"] = text
        if isinstance(block.get("fields"), list):
            out["fields"] = [f for f in (_cap_obj(f, FIELD_CAP) for f in block["fields"][:MAX_FIELDS]) if f]
        return out
    if kind == "context":
        elements = block.get("elements")
        if not isinstance(elements, list):
            return None
        kept = [e if not isinstance(e, dict) or "text" not in e else _cap_obj(e, min(CONTEXT_ELEMENT_CAP, budget))
                for e in elements[:MAX_CONTEXT_ELEMENTS]]
        kept = [e for e in kept if e is not None]
        return {**block, "elements": kept} if kept else None
    return block


def _text_len(block: dict[str, Any]) -> int:
    return len(json.dumps(block, ensure_ascii=False))


def fallback_alert(alert: Alert, error: str, now: datetime) -> Alert:
    """A short plain-text alert saying that `alert` was refused for good and where its evidence is."""
    tag = f" ({name(alert.tag, 'slack', 60)})" if alert.tag else ""
    text = (
        f"An alert could not be posted: Slack refused it for good ({clean(error, 120)}). "
        f"It was a {name(alert.kind, 'slack', 40)} alert about {name(alert.model, 'slack', 80)}{tag}. "
        f"The whole alert is kept in the canary's database (table alerts, status failed, key "
        f"{name(post_key(alert.key), 'slack', KEY_CAP)}); `canary status` counts such alerts."
    )
    return Alert(
        key=f"{FALLBACK_KIND}|{post_key(alert.key)}", created_at=now, kind=FALLBACK_KIND,
        model=alert.model[:KEY_CAP], tag=None, text=text, blocks_json="[]",
    )
