"""An upstream that echoes secrets back: a loopback proxy in front of the simulator, for the secret scan.

Most requests are forwarded to the simulator (streams relayed chunk by chunk). Requests pinned to one of the
echo tags are answered here, each reply carrying every value in `echoed` (whole, and as a 15-character prefix
cut with an ellipsis, as an excerpt would leave it: `cut`):

* `echoco`   a healthy-looking stream whose text is the secrets
* `errecho`  HTTP 500 whose JSON error message is the secrets
* `midecho`  one text chunk, then a mid-stream error chunk whose message is the secrets
* `pinecho`  a stream whose `provider` field is a secret (a pin that did not hold)

The echo tags' replies also carry the request's own Authorization header, as sent and base64-encoded.
Every response also carries the secrets in headers (`X-Echo`, `WWW-Authenticate`). With `basic=(user, pw)`
the proxy accepts HTTP Basic credentials (what httpx sends for a base URL with userinfo) and forwards with
`Bearer api_key`; wrong credentials get a 401 whose body echoes them.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

ECHO_TAGS = ("echoco", "errecho", "midecho", "pinecho")


def cut(secret: str) -> str:
    """The first 15 characters of a secret (of a URL's last path segment: the secret part of a webhook)."""
    return secret.rsplit("/", 1)[-1][:15]


def echo_text(echoed: Sequence[str]) -> str:
    return " ".join(f"Your key is {s} (again: {cut(s)}…)." for s in echoed)


class _Server(ThreadingHTTPServer):
    # A real upstream's accept queue, not socketserver's 5: the probe worker opens a round's connections at once
    # (one event loop), and this server closes each after one request; a full queue resets connections.
    request_queue_size = 256


class EchoUpstream:
    def __init__(
        self, target: str, api_key: str, echoed: Sequence[str], basic: tuple[str, str] | None = None
    ) -> None:
        self.target, self.api_key, self.echoed, self.basic = target.rstrip("/"), api_key, list(echoed), basic
        self.echo_count = 0
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def base_url_with(self, user: str, password: str) -> str:
        return f"http://{user}:{password}@127.0.0.1:{self.port}/api/v1"

    def headers(self) -> dict[str, str]:
        joined = " ".join(self.echoed)
        return {"X-Echo": joined, "WWW-Authenticate": f'Bearer realm="echo", error_description="{joined}"'}

    @contextmanager
    def running(self) -> Iterator[EchoUpstream]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="echo-upstream")
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join(timeout=5)


def _chunk(provider: str, content: str, finish: str | None = None, **extra: Any) -> bytes:
    doc = {
        "id": "gen-1-echo", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "provider": provider,
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": finish,
                     "native_finish_reason": finish}],
        **extra,
    }
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


def _handler(up: EchoUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _bearer(self) -> str | None:
            """The key to forward with, or None after answering 401 to bad Basic credentials."""
            auth = self.headers.get("Authorization", "")
            if not auth.lower().startswith("basic "):
                return auth[7:] if auth.lower().startswith("bearer ") else ""
            user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            if up.basic is not None and (user, password) == up.basic:
                return up.api_key
            body = {"error": {"message": f"bad credentials {user}:{password}", "code": 401}}
            self._send(401, "application/json", json.dumps(body).encode())
            return None

        def _send(self, status: int, ctype: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in up.headers().items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            bearer = self._bearer()
            if bearer is None:
                return
            headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
            r = httpx.get(up.target + self.path.removeprefix("/api/v1"), headers=headers, timeout=30)
            self._send(r.status_code, r.headers.get("content-type", "application/json"), r.content)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            bearer = self._bearer()
            if bearer is None:
                return
            body = json.loads(raw)
            only = (body.get("provider") or {}).get("only") or [None]
            tag = only[0]
            if tag in ECHO_TAGS:
                up.echo_count += 1
                self._echo(tag)
                return
            self._forward(raw, bearer)

        def _echo(self, tag: str) -> None:
            # The request's own Authorization header too, whole and base64-encoded (what a debugging proxy
            # shows): the redactor must know every derived form of the key it carries.
            auth = self.headers.get("Authorization", "")
            wire = base64.b64encode(auth.encode()).decode()
            text = echo_text(up.echoed) + f" Your header was {auth} ({wire})."
            if tag == "errecho":
                err = {"error": {"message": f"Provider returned error: {text}", "code": 500,
                                 "metadata": {"raw": text, "provider_name": "Errecho"}}}
                self._send(500, "application/json", json.dumps(err).encode())
                return
            provider = up.echoed[0] if tag == "pinecho" else tag.capitalize()
            frames = [_chunk(provider, "")]
            words = text.split(" ")
            if tag == "midecho":
                frames.append(_chunk(provider, words[0] + " "))
                frames.append(_chunk(provider, "", "error", error={"code": 502, "message": text}))
            else:
                frames += [_chunk(provider, w + " ") for w in words]
                frames += [_chunk(provider, "", "stop"), b"data: [DONE]\n\n"]
            self._send(200, "text/event-stream", b"".join(frames))

        def _forward(self, raw: bytes, bearer: str) -> None:
            headers = {"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"}
            with httpx.Client(timeout=httpx.Timeout(60, connect=5)) as client, client.stream(
                "POST", up.target + "/chat/completions", content=raw, headers=headers
            ) as r:
                self.send_response(r.status_code)
                self.send_header("Content-Type", r.headers.get("content-type", "application/json"))
                self.send_header("Connection", "close")
                for k, v in up.headers().items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    for data in r.iter_raw():
                        self.wfile.write(data)
                        self.wfile.flush()
                except (httpx.HTTPError, OSError):
                    pass  # the simulator cut the stream (a fault): so do we
            self.close_connection = True

    return Handler
