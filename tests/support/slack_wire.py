"""What the Slack double (tests/support/slack_server.py) answers and accepts: Slack's JSON answers, request bodies
(JSON or form), a chat.postMessage answer's ts, Block Kit's size rules; each request as it recorded it, and the
HTTP handler class that hands the requests to it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
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


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it, and what it answered."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None  # parsed JSON or form; None if unparseable
    raw: bytes
    status: int
    ok: bool  # the request was accepted as a posted message
    ts: str | None = None  # the message's ts when one was posted through chat.postMessage
    at: float = field(default_factory=time.monotonic)  # when it arrived (monotonic seconds)

    @property
    def alert_key(self) -> str | None:
        """The idempotency key the canary puts in chat.postMessage's message metadata."""
        meta = (self.body or {}).get("metadata")
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except ValueError:
                return None
        payload = meta.get("event_payload") if isinstance(meta, dict) else None
        return payload.get("key") if isinstance(payload, dict) else None


def handler_for(handle: Callable[[str, dict[str, str], bytes], Reply]) -> type[BaseHTTPRequestHandler]:
    """The HTTP handler class that hands every request (GET or POST) to `handle(path, headers, raw body)`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self.do_POST()

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, ctype, text, extra = handle(self.path, headers, raw)
            data = text.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a delayed answer)
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

    return Handler
