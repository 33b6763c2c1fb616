"""A local Slack-compatible HTTP server for tests (127.0.0.1, port 0, background thread, stdlib only).

* POST /api/chat.postMessage: Bearer auth, JSON or form body; `{"ok": true, "ts": ...}` like Slack,
  `{"ok": false, "error": ...}` for bad auth, missing channel or text, malformed blocks, and Slack's size
  rules: `msg_too_long` past `max_text_chars` (40,000 like Slack; lower it for a stricter Slack),
  `invalid_blocks` for more than 50 blocks, a header over 150 or a section over 3,000 characters.
* POST /services/T/B/X (the webhook): `ok`.
* GET /api/conversations.history?channel=C0CANARY[&include_all_metadata=true]: the messages posted so far,
  newest first, with their message metadata when asked (how the canary checks whether a post of unknown
  fate landed). Like the Web API: `oldest` / `latest` (ts strings) bound the range exclusively unless
  `inclusive` is true, `limit` (default 100, at most 999) caps the page and `has_more` says whether it cut.

Every posted message gets a Slack-like ts, `"<unix seconds>.<6 digits>"`, from `clock` (wall time by default,
strictly increasing), so an `oldest` computed from the caller's clock selects what Slack would.

Every request is recorded (headers, parsed body, the status we answered). Failure modes for the next requests:
`fail_next(n, status=500)`, `rate_limit_next(n, retry_after=1)`, `error_next(n, "invalid_blocks")`,
`delay_next(n, seconds)` (the message is posted, the answer comes `seconds` later: past the client's timeout
the client cannot know), and `down()` / `up()` (connection refused, or `down(mode="503")`: every request
answered 503).

    with SlackServer(token="xoxb-test") as slack:
        settings = SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_CHANNEL": "#c",
                                           "SLACK_API_URL": slack.api_url})
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qsl

from tests.support.slack_history import HistoryWindow, truthy, ts_us

WEBHOOK_PATH = "/services/T0CANARY/B0CANARY/XXXXXXXXXXXXXXXXXXXXXXXX"
CHANNEL_ID = "C0CANARY"

#: status, content type, body, extra headers
Reply = tuple[int, str, str, dict[str, str]]


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


@dataclass
class _Fault:
    status: int  # -1: a content error (`error_next`)
    body: str | None  # None: what Slack would say for this status
    headers: dict[str, str] = field(default_factory=dict)


class SlackServer:
    def __init__(
        self, token: str = "xoxb-canary-test-token", host: str = "127.0.0.1", clock: Callable[[], float] = time.time
    ) -> None:
        self.token = token
        self.host = host
        self._clock = clock
        self._last_ts_us = 0
        self.port = 0
        self.max_text_chars = 40_000  # Slack refuses longer text with msg_too_long
        self._lock = threading.Lock()
        self._faults: deque[_Fault] = deque()
        self._recorded: list[Recorded] = []
        self._down: Literal["refuse", "503"] | None = None
        self._delays: deque[float] = deque()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------
    def start(self) -> SlackServer:
        self._httpd = ThreadingHTTPServer((self.host, self.port), _handler_for(self))
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="slack-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> SlackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}/api/"

    @property
    def webhook_url(self) -> str:
        return f"http://{self.host}:{self.port}{WEBHOOK_PATH}"

    # --- failure modes -----------------------------------------------------------------------------------
    def fail_next(self, n: int = 1, status: int = 500, body: str | None = None) -> None:
        """Answer the next `n` requests with `status` (body: Slack's JSON error; plain text on webhooks)."""
        with self._lock:
            self._faults.extend(_Fault(status, body) for _ in range(n))

    def rate_limit_next(self, n: int = 1, retry_after: float | str = 1) -> None:
        """Answer the next `n` requests 429 with `Retry-After` (seconds, or a header value sent as is)."""
        value = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
        with self._lock:
            self._faults.extend(_Fault(429, None, {"Retry-After": value}) for _ in range(n))

    def error_next(self, n: int = 1, error: str = "invalid_blocks") -> None:
        """Slack refuses the content: 200 `{"ok": false, "error": ...}` (API) or 400 `error` (webhook)."""
        with self._lock:
            self._faults.extend(_Fault(-1, error) for _ in range(n))

    def delay_next(self, n: int = 1, seconds: float = 2.0, after: int = 0) -> None:
        """Post the next `n` messages (after `after` answered at once), but answer each only after `seconds`
        (a slow Slack)."""
        with self._lock:
            self._delays.extend([0.0] * after + [seconds] * n)

    def down(self, mode: Literal["refuse", "503"] = "refuse") -> None:
        """`refuse`: close the listening socket (connection refused); `503`: answer every request 503."""
        self._down = mode
        if mode == "refuse":
            self.stop()

    def up(self) -> None:
        was_refusing = self._down == "refuse"
        self._down = None
        if was_refusing:
            self.start()  # same port: ThreadingHTTPServer sets SO_REUSEADDR

    # --- what was received -------------------------------------------------------------------------------
    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._recorded)

    @property
    def messages(self) -> list[Recorded]:
        """Requests that Slack would have turned into a posted message."""
        return [r for r in self.requests if r.ok]

    def reset(self) -> None:
        with self._lock:
            self._recorded.clear()
            self._faults.clear()
            self._delays.clear()

    # --- request handling (called from the handler thread) -----------------------------------------------
    def _handle(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        body = _parse(headers.get("content-type", ""), raw)
        reply = self._route(path, headers, body)
        status, ctype, text, extra = reply
        if extra.pop("x-already-recorded", None):
            return status, ctype, text, extra
        ok = status == 200 and (text == "ok" or _json_ok(text)) and path == "/api/chat.postMessage" \
            or (status == 200 and text == "ok")
        with self._lock:
            self._recorded.append(Recorded(path.partition("?")[0], headers, body, raw, status, ok, _reply_ts(text)))
        return reply

    def _next_ts(self) -> str:
        """A message ts like Slack's: the clock's time in microseconds, strictly increasing."""
        with self._lock:
            self._last_ts_us = max(round(self._clock() * 1_000_000), self._last_ts_us + 1)
            return f"{self._last_ts_us // 1_000_000}.{self._last_ts_us % 1_000_000:06d}"

    def _route(self, path: str, headers: dict[str, str], body: dict[str, Any] | None) -> Reply:
        if self._down == "503":
            return 503, "text/plain", "service unavailable", {}
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        is_webhook = path == WEBHOOK_PATH
        if fault is not None:
            return _fault_reply(fault, is_webhook)
        if is_webhook or path == "/api/chat.postMessage":
            reply = self._webhook(body) if is_webhook else self._post_message(headers, body)
            posted = reply[0] == 200 and (reply[2] == "ok" or _json_ok(reply[2]))
            with self._lock:
                delay = self._delays.popleft() if self._delays and posted else 0.0
            if delay:
                with self._lock:  # posted now (visible in the history), answered late
                    self._recorded.append(Recorded(path, headers, body, b"", 200, True, _reply_ts(reply[2])))
                time.sleep(delay)
                return reply[0], reply[1], reply[2], {**reply[3], "x-already-recorded": "1"}
            return reply
        if path.startswith("/api/conversations.history"):
            return self._history(headers, path, body)
        return 404, "application/json", json.dumps({"ok": False, "error": "unknown_method"}), {}

    def _history(self, headers: dict[str, str], path: str, body: dict[str, Any] | None) -> Reply:
        query = {**dict(parse_qsl(path.partition("?")[2])), **(body or {})}  # slack-sdk sends a form body
        if headers.get("authorization", "") != f"Bearer {self.token}":
            return 200, "application/json", json.dumps({"ok": False, "error": "invalid_auth"}), {}
        if query.get("channel") != CHANNEL_ID:
            return 200, "application/json", json.dumps({"ok": False, "error": "channel_not_found"}), {}
        try:
            window = HistoryWindow.of(query)
        except ValueError:
            return 200, "application/json", json.dumps({"ok": False, "error": "invalid_arguments"}), {}
        with_meta = truthy(query.get("include_all_metadata"))
        messages = []
        for r in self.requests:
            if not (r.ok and r.path == "/api/chat.postMessage" and r.ts is not None and window.holds(r.ts)):
                continue
            message: dict[str, Any] = {"type": "message", "text": (r.body or {}).get("text", ""), "ts": r.ts}
            meta = (r.body or {}).get("metadata")
            if with_meta and meta:
                message["metadata"] = json.loads(meta) if isinstance(meta, str) else meta
            messages.append(message)
        newest_first = sorted(messages, key=lambda m: ts_us(m["ts"]), reverse=True)
        page = newest_first[: window.limit]
        answer = {"ok": True, "messages": page, "has_more": len(newest_first) > len(page)}
        return 200, "application/json", json.dumps(answer), {}

    def _webhook(self, body: dict[str, Any] | None) -> Reply:
        if not body or not (body.get("text") or body.get("blocks")):
            return 400, "text/plain", "no_text", {}
        if "blocks" in body and not _valid_blocks(body["blocks"]):
            return 400, "text/plain", "invalid_blocks", {}
        if len(str(body.get("text") or "")) > self.max_text_chars:
            return 400, "text/plain", "msg_too_long", {}
        return 200, "text/plain", "ok", {}

    def _post_message(
        self, headers: dict[str, str], body: dict[str, Any] | None
    ) -> Reply:
        def answer(payload: dict[str, Any]) -> Reply:
            return 200, "application/json; charset=utf-8", json.dumps(payload), {}

        auth = headers.get("authorization", "")
        if not auth:
            return answer({"ok": False, "error": "not_authed"})
        if auth != f"Bearer {self.token}":
            return answer({"ok": False, "error": "invalid_auth"})
        if body is None:
            return answer({"ok": False, "error": "invalid_json"})
        if not body.get("channel"):
            return answer({"ok": False, "error": "channel_not_found"})
        blocks = body.get("blocks")
        if isinstance(blocks, str):
            try:
                blocks = json.loads(blocks)
            except ValueError:
                return answer({"ok": False, "error": "invalid_blocks_format"})
        if not body.get("text") and not blocks:
            return answer({"ok": False, "error": "no_text"})
        if blocks is not None and not _valid_blocks(blocks):
            return answer({"ok": False, "error": "invalid_blocks"})
        if len(str(body.get("text") or "")) > self.max_text_chars:
            return answer({"ok": False, "error": "msg_too_long"})
        ts = self._next_ts()
        return answer({"ok": True, "channel": CHANNEL_ID, "ts": ts,
                       "message": {"text": body.get("text", ""), "ts": ts}})


def _reply_ts(text: str) -> str | None:
    """The ts a chat.postMessage answer carries (None for anything else)."""
    try:
        ts = json.loads(text).get("ts")
    except (ValueError, AttributeError):
        return None
    return ts if isinstance(ts, str) else None


def _fault_reply(fault: _Fault, is_webhook: bool) -> Reply:
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


def _parse(content_type: str, raw: bytes) -> dict[str, Any] | None:
    try:
        if "application/x-www-form-urlencoded" in content_type:
            return dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _json_ok(text: str) -> bool:
    try:
        return json.loads(text).get("ok") is True
    except (ValueError, AttributeError):
        return False


#: Block Kit's text limits by block type (characters of the block's `text.text`).
_BLOCK_TEXT_CAPS = {"header": 150, "section": 3000}


def _valid_blocks(blocks: Any) -> bool:
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


def _handler_for(server: SlackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self.do_POST()

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, ctype, text, extra = server._handle(self.path, headers, raw)
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
