"""What the Slack double (tests/support/slack_server.py) answers and accepts: Slack's JSON answers, request bodies
(JSON or form), a chat.postMessage answer's ts, and Block Kit's size rules."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

#: status, content type, body, extra headers
Reply = tuple[int, str, str, dict[str, str]]


@dataclass
class Fault:
    status: int  # -1: a content error (`error_next`)
    body: str | None  # None: what Slack would say for this status
    headers: dict[str, str] = field(default_factory=dict)


def fault_reply(fault: Fault, is_webhook: bool) -> Reply:
    """What Slack answers: JSON `{"ok": false, "error": ...}` on the Web API, plain text on webhooks."""
    json_type = "application/json; charset=utf-8"
    if fault.status == -1:  # the content was refused
        error = fault.body or "invalid_blocks"
        if is_webhook:
            return 400, "text/plain", error, {}
        return 200, json_type, json.dumps({"ok": False, "error": error}), {}
    if fault.body is not None:
        return fault.status, "text/plain", fault.body, fault.headers
    error = "ratelimited" if fault.status == 429 else "internal_error"
    if is_webhook:
        return fault.status, "text/plain", error, fault.headers
    return fault.status, json_type, json.dumps({"ok": False, "error": error}), fault.headers


def answer(payload: dict[str, Any]) -> Reply:
    return 200, "application/json; charset=utf-8", json.dumps(payload), {}


def reply_ts(text: str) -> str | None:
    """The ts a chat.postMessage answer carries (None for anything else)."""
    try:
        ts = json.loads(text).get("ts")
    except (ValueError, AttributeError):
        return None
    return ts if isinstance(ts, str) else None


def parse_body(content_type: str, raw: bytes) -> dict[str, Any] | None:
    try:
        if "application/x-www-form-urlencoded" in content_type:
            return dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return parsed if isinstance(parsed, dict) else None


def json_ok(text: str) -> bool:
    try:
        return json.loads(text).get("ok") is True
    except (ValueError, AttributeError):
        return False


#: Block Kit's text limits by block type (characters of the block's `text.text`).
_BLOCK_TEXT_CAPS = {"header": 150, "section": 3000}


def valid_blocks(blocks: Any) -> bool:
    """Slack's rules: a list of at most 50 objects, each with a `type`; a header's text at most 150
    characters, a section's 3,000."""
    if not (isinstance(blocks, list) and len(blocks) <= 50
            and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks)):
        return False
    for b in blocks:
        text = b.get("text")
        cap = _BLOCK_TEXT_CAPS.get(b["type"])
        if cap is not None and isinstance(text, dict) and len(str(text.get("text") or "")) > cap:
            return False
    return True
