"""A local Slack-compatible HTTP server for tests (127.0.0.1, port 0, background thread, stdlib only).

* POST /api/chat.postMessage: Bearer auth, JSON or form body; `{"ok": true, "ts": ...}` like Slack,
  `{"ok": false, "error": ...}` for bad auth, missing channel or text, malformed blocks, and Slack's size
  rules: `msg_too_long` past `max_text_chars` (40,000 like Slack; lower it for a stricter Slack),
  `invalid_blocks` for more than 50 blocks, a header over 150 or a section over 3,000 characters.
  With `thread_ts` (a posted message's ts) the message is a reply in that thread (`thread_not_found` else).
* POST /api/chat.update: rewrites a posted message (channel ID + ts; `message_not_found` else); `updates` lists
  them, and the history shows the message as last updated.
* POST /services/T/B/X (the webhook): `ok`.
* GET /api/conversations.history?channel=C0CANARY[&include_all_metadata=true]: the messages posted so far,
  newest first, with their message metadata when asked (how the canary checks whether a post of unknown
  fate landed); thread replies are not in it, as in Slack. Like the Web API: `oldest` / `latest` (ts strings)
  bound the range exclusively unless `inclusive` is true, `limit` (default 100, at most 999) caps the page and
  `has_more` says whether it cut.
* GET /api/conversations.replies?channel=C0CANARY&ts=<parent ts>: the parent and its thread's replies.

Every posted message gets a Slack-like ts, `"<unix seconds>.<6 digits>"`, from `clock` (wall time by default,
strictly increasing), so an `oldest` computed from the caller's clock selects what Slack would.

Every request is recorded (headers, parsed body, the status we answered). Failure modes for the next requests:
`fail_next(n, status=500)`, `rate_limit_next(n, retry_after=1)`, `error_next(n, "invalid_blocks")`,
`delay_next(n, seconds)` (the message is posted, the answer comes `seconds` later: past the client's timeout
the client cannot know), `fail_method_next("chat.update", n)` (that method only), `write_then_fail_next(n,
status=500)` (the message is posted, the answer is an error: Slack wrote it, then failed), and `down()` / `up()`
(connection refused, or `down(mode="503")`: every request answered 503). `limit_rate(per_s=1, burst=1)` makes
chat.postMessage strict like Slack: a post past that rate per channel is answered 429 with the Retry-After
(whole seconds) that lets the next one through (`rate_limited` counts them).

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
from http.server import ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qsl

from tests.support.slack_history import HistoryWindow, RateLimiter, channel_messages, truthy, ts_us
from tests.support.slack_wire import (
    Fault,
    Recorded,
    Reply,
    answer,
    fault_reply,
    handler_for,
    json_ok,
    parse_body,
    reply_ts,
    valid_blocks,
)

WEBHOOK_PATH = "/services/T0CANARY/B0CANARY/XXXXXXXXXXXXXXXXXXXXXXXX"
CHANNEL_ID = "C0CANARY"


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
        self._faults: deque[Fault] = deque()
        self._recorded: list[Recorded] = []
        self._down: Literal["refuse", "503"] | None = None
        self._delays: deque[float] = deque()
        self._write_faults: deque[int] = deque()
        self._method_faults: dict[str, deque[Fault]] = {}
        self._limiter: RateLimiter | None = None
        self.rate_limited = 0  # posts answered 429 by `limit_rate`
        self._edits: dict[str, dict[str, Any]] = {}  # ts -> the body of its latest chat.update
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------
    def start(self) -> SlackServer:
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler_for(self._handle))
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
            self._faults.extend(Fault(status, body) for _ in range(n))

    def rate_limit_next(self, n: int = 1, retry_after: float | str = 1) -> None:
        """Answer the next `n` requests 429 with `Retry-After` (seconds, or a header value sent as is)."""
        value = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
        with self._lock:
            self._faults.extend(Fault(429, None, {"Retry-After": value}) for _ in range(n))

    def error_next(self, n: int = 1, error: str = "invalid_blocks") -> None:
        """Slack refuses the content: 200 `{"ok": false, "error": ...}` (API) or 400 `error` (webhook)."""
        with self._lock:
            self._faults.extend(Fault(-1, error) for _ in range(n))

    def delay_next(self, n: int = 1, seconds: float = 2.0, after: int = 0) -> None:
        """Post the next `n` messages (after `after` answered at once), but answer each only after `seconds`
        (a slow Slack)."""
        with self._lock:
            self._delays.extend([0.0] * after + [seconds] * n)

    def fail_method_next(self, method: str, n: int = 1, status: int = 500) -> None:
        """Answer the next `n` calls of one Web API method (e.g. `chat.update`) `status`; other calls go on."""
        with self._lock:
            self._method_faults.setdefault(f"/api/{method}", deque()).extend(Fault(status, None) for _ in range(n))

    def write_then_fail_next(self, n: int = 1, status: int = 500) -> None:
        """Post the next `n` messages, then answer each `status` (Slack wrote it, then failed)."""
        with self._lock:
            self._write_faults.extend([status] * n)

    def limit_rate(self, per_s: float = 1.0, burst: int = 1) -> None:
        """chat.postMessage like Slack: past `per_s` per channel (after `burst`), 429 with Retry-After."""
        self._limiter = RateLimiter(per_s, burst)

    @property
    def updates(self) -> list[Recorded]:
        """The chat.update calls Slack took."""
        return [r for r in self.requests if r.path == "/api/chat.update" and r.status == 200 and r.ok]

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
        return [r for r in self.requests if r.ok and r.path != "/api/chat.update"]

    def reset(self) -> None:
        with self._lock:
            self._recorded.clear()
            self._faults.clear()
            self._delays.clear()
            self._write_faults.clear()
            self._method_faults.clear()
            self._edits.clear()

    # --- request handling (called from the handler thread) -----------------------------------------------
    def _handle(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        body = parse_body(headers.get("content-type", ""), raw)
        reply = self._route(path, headers, body)
        status, ctype, text, extra = reply
        if extra.pop("x-already-recorded", None):
            return status, ctype, text, extra
        ok = status == 200 and (text == "ok" or json_ok(text)) and path in ("/api/chat.postMessage",
                                                                            "/api/chat.update") \
            or (status == 200 and text == "ok")
        with self._lock:
            self._recorded.append(Recorded(path.partition("?")[0], headers, body, raw, status, ok, reply_ts(text)))
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
            by_method = self._method_faults.get(path.partition("?")[0])
            fault = by_method.popleft() if by_method else self._faults.popleft() if self._faults else None
        is_webhook = path == WEBHOOK_PATH
        if fault is not None:
            return fault_reply(fault, is_webhook)
        if path == "/api/chat.postMessage" and self._limiter is not None:
            wait = self._limiter.refused()  # one channel: a reply in a thread counts like any post
            if wait is not None:
                self.rate_limited += 1
                return 429, "application/json", json.dumps({"ok": False, "error": "ratelimited"}), \
                    {"Retry-After": str(wait)}
        if path == "/api/chat.update":
            return self._update(headers, body)
        if is_webhook or path == "/api/chat.postMessage":
            return self._post_or_fault(path, headers, body, is_webhook)
        if path.startswith(("/api/conversations.history", "/api/conversations.replies")):
            return self._history(headers, path, body)
        return 404, "application/json", json.dumps({"ok": False, "error": "unknown_method"}), {}

    def _post_or_fault(self, path: str, headers: dict[str, str], body: dict[str, Any] | None,
                       is_webhook: bool) -> Reply:
        """A post, then the next write fault or delay set for it (the message is written either way)."""
        reply = self._webhook(body) if is_webhook else self._post_message(headers, body)
        posted = reply[0] == 200 and (reply[2] == "ok" or json_ok(reply[2]))
        with self._lock:
            delay = self._delays.popleft() if self._delays and posted else 0.0
            broken = self._write_faults.popleft() if self._write_faults and posted else None
        if broken is not None:  # written, then answered as a failure
            with self._lock:
                self._recorded.append(Recorded(path, headers, body, b"", 200, True, reply_ts(reply[2])))
            answer = "internal_error" if is_webhook else json.dumps({"ok": False, "error": "internal_error"})
            return broken, reply[1], answer, {"x-already-recorded": "1"}
        if delay:
            with self._lock:  # posted now (visible in the history), answered late
                self._recorded.append(Recorded(path, headers, body, b"", 200, True, reply_ts(reply[2])))
            time.sleep(delay)
            return reply[0], reply[1], reply[2], {**reply[3], "x-already-recorded": "1"}
        return reply

    def _posted(self) -> list[Recorded]:
        return [r for r in self.requests if r.ok and r.path == "/api/chat.postMessage" and r.ts is not None]

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
        replies_of = str(query.get("ts") or "") if path.startswith("/api/conversations.replies") else None
        posted = [(str(r.ts), {**(r.body or {}), **self._edits.get(str(r.ts), {})}) for r in self._posted()]
        messages = channel_messages(posted, window, replies_of, truthy(query.get("include_all_metadata")))
        newest_first = sorted(messages, key=lambda m: ts_us(m["ts"]), reverse=True)
        page = newest_first[: window.limit]
        answer = {"ok": True, "messages": page, "has_more": len(newest_first) > len(page)}
        return 200, "application/json", json.dumps(answer), {}

    def _webhook(self, body: dict[str, Any] | None) -> Reply:
        if not body or not (body.get("text") or body.get("blocks")):
            return 400, "text/plain", "no_text", {}
        if "blocks" in body and not valid_blocks(body["blocks"]):
            return 400, "text/plain", "invalid_blocks", {}
        if len(str(body.get("text") or "")) > self.max_text_chars:
            return 400, "text/plain", "msg_too_long", {}
        return 200, "text/plain", "ok", {}

    def _update(self, headers: dict[str, str], body: dict[str, Any] | None) -> Reply:
        if headers.get("authorization", "") != f"Bearer {self.token}":
            return answer({"ok": False, "error": "invalid_auth"})
        if body is None or body.get("channel") != CHANNEL_ID:
            return answer({"ok": False, "error": "channel_not_found"})
        ts = str(body.get("ts") or "")
        if ts not in {r.ts for r in self._posted()}:
            return answer({"ok": False, "error": "message_not_found"})
        blocks = body.get("blocks")
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        if blocks is not None and not valid_blocks(blocks):
            return answer({"ok": False, "error": "invalid_blocks"})
        with self._lock:
            self._edits[ts] = {k: body[k] for k in ("text", "blocks", "metadata") if k in body}
        return answer({"ok": True, "channel": CHANNEL_ID, "ts": ts, "text": body.get("text", "")})

    def _post_message(
        self, headers: dict[str, str], body: dict[str, Any] | None
    ) -> Reply:
        auth = headers.get("authorization", "")
        if not auth:
            return answer({"ok": False, "error": "not_authed"})
        if auth != f"Bearer {self.token}":
            return answer({"ok": False, "error": "invalid_auth"})
        if body is None:
            return answer({"ok": False, "error": "invalid_json"})
        if not body.get("channel"):
            return answer({"ok": False, "error": "channel_not_found"})
        if body.get("thread_ts") and body["thread_ts"] not in {r.ts for r in self._posted()}:
            return answer({"ok": False, "error": "thread_not_found"})
        blocks = body.get("blocks")
        if isinstance(blocks, str):
            try:
                blocks = json.loads(blocks)
            except ValueError:
                return answer({"ok": False, "error": "invalid_blocks_format"})
        if not body.get("text") and not blocks:
            return answer({"ok": False, "error": "no_text"})
        if blocks is not None and not valid_blocks(blocks):
            return answer({"ok": False, "error": "invalid_blocks"})
        if len(str(body.get("text") or "")) > self.max_text_chars:
            return answer({"ok": False, "error": "msg_too_long"})
        ts = self._next_ts()
        return answer({"ok": True, "channel": CHANNEL_ID, "ts": ts,
                       "message": {"text": body.get("text", ""), "ts": ts}})
