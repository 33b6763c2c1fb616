"""The scripted loopback upstream (tests/support/fake_upstream.py) with what the wire can do to a router: compress,
cut the connection after the finish chunk, leave a chunked body unterminated, go quiet, echo the key it was sent.

    with WireUpstream({"t1": Script("gzip_stream"), "t2": Script("ok")}) as up: ...

Kinds added to FakeUpstream's:

    gzip_stream            a healthy event stream, gzip-encoded (Content-Encoding: gzip), flushed per event
    gzip_error             an HTTP `status` error whose JSON body (`body`, or OpenRouter's generic one) is gzip-encoded
    gzip_json              a healthy non-streamed answer, gzip-encoded
    reset_after_finish     content, the finish chunk (and the usage chunk), then a TCP reset: no [DONE]
    unterminated           content, the finish chunk, the usage chunk, then a clean close without [DONE] or the
                           chunked body's last (zero) chunk
    idle_after_finish      content and the finish chunk, then silence for `delay_s`
    echo_auth              the Authorization header it received, in the answer (streamed: the key split across two
                           TCP writes in one event, then a base64 Basic form in the next; not: in the JSON content)
    echo_auth_error        the Authorization header it received in a 400 error body (passed to the client as is)
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import zlib
from typing import Any

from tests.support.fake_upstream import FakeUpstream, Script, _chunk, _http_chunk

__all__ = ["Script", "WireUpstream"]

_STREAM_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                b"Connection: close\r\n")
NO_PROVIDERS = json.dumps({"error": {"message": "No allowed providers are available for the selected model.",
                                     "code": 404}}).encode()


def _events(model: str, s: Script) -> list[bytes]:
    words = [w + " " for w in s.text.split(" ")]
    words[-1] = words[-1].rstrip()
    usage = {"prompt_tokens": s.prompt_tokens, "completion_tokens": len(words),
             "total_tokens": s.prompt_tokens + len(words)}
    return [
        b": OPENROUTER PROCESSING\n\n",
        _chunk(model, s.provider, {"role": "assistant", "content": ""}),
        *(_chunk(model, s.provider, {"role": "assistant", "content": w}) for w in words),
        _chunk(model, s.provider, {"role": "assistant", "content": ""}, "stop"),
        _chunk(model, s.provider, {"role": "assistant", "content": ""}, "stop", usage),
    ]


class WireUpstream(FakeUpstream):
    def _authorization(self, model: str) -> str:
        return self.for_model(model)[-1].headers.get("authorization", "")

    async def _respond(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        handler = getattr(self, "_" + s.kind, None)
        if s.kind in _KINDS and handler is not None:
            await handler(s, model, stream, w)
        else:
            await super()._respond(s, model, stream, w)

    async def _gzip_stream(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        w.write(_STREAM_HEAD + b"Content-Encoding: gzip\r\n\r\n")
        packer = zlib.compressobj(wbits=31)
        for event in [*_events(model, s), b"data: [DONE]\n\n"]:
            w.write(_http_chunk(packer.compress(event) + packer.flush(zlib.Z_SYNC_FLUSH)))
            await w.drain()
        w.write(_http_chunk(packer.flush()) + b"0\r\n\r\n")
        await w.drain()

    async def _gzip_error(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        body = gzip.compress(s.body or json.dumps({"error": {"message": "Provider returned error",
                                                             "code": s.status}}).encode())
        extra = f"Retry-After: {s.retry_after}\r\n" if s.retry_after is not None else ""
        w.write(f"HTTP/1.1 {s.status} Error\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n{extra}"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await w.drain()

    async def _gzip_json(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        doc = {"id": "gen-1-fake", "object": "chat.completion", "created": 1, "model": model, "provider": s.provider,
               "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": s.text}}]}
        body = gzip.compress(json.dumps(doc).encode())
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await w.drain()

    async def _finish_then(self, s: Script, model: str, w: asyncio.StreamWriter, usage: bool) -> None:
        w.write(_STREAM_HEAD + b"\r\n")
        for event in _events(model, s)[: None if usage else -1]:
            w.write(_http_chunk(event))
            await w.drain()

    async def _reset_after_finish(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        await self._finish_then(s, model, w, usage=True)
        await asyncio.sleep(0.05)
        w.transport.abort()

    async def _unterminated(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        await self._finish_then(s, model, w, usage=True)
        await asyncio.sleep(0.05)
        if w.can_write_eof():
            w.write_eof()  # a clean FIN, but the chunked body never got its last chunk

    async def _idle_after_finish(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        await self._finish_then(s, model, w, usage=False)
        await asyncio.sleep(s.delay_s or 30)

    async def _echo_auth(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        auth = self._authorization(model)
        key = auth.removeprefix("Bearer ")
        if not stream:
            doc = {"id": "gen-1-fake", "object": "chat.completion", "created": 1, "model": model,
                   "provider": s.provider, "choices": [{"index": 0, "finish_reason": "stop", "message": {
                       "role": "assistant", "content": f"You sent me: {auth}"}}]}
            body = json.dumps(doc).encode()
            w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Generation-Id: gen-" + key.encode()
                    + f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await w.drain()
            return
        w.write(_STREAM_HEAD + b"\r\n")
        w.write(_http_chunk(_chunk(model, s.provider, {"role": "assistant", "content": ""})))
        echoed = _chunk(model, s.provider, {"content": f"You sent me: {auth}."})
        half = echoed.index(key.encode()) + len(key) // 2
        for piece in (echoed[:half], echoed[half:]):  # one event, two TCP writes: the key split across reads
            w.write(_http_chunk(piece))
            await w.drain()
            await asyncio.sleep(0.05)
        basic = base64.b64encode(f"router:{key}".encode()).decode()
        for event in (_chunk(model, s.provider, {"content": f" As Basic: {basic}"}),
                      _chunk(model, s.provider, {"content": ""}, "stop"), b"data: [DONE]\n\n"):
            w.write(_http_chunk(event))
        w.write(b"0\r\n\r\n")
        await w.drain()

    async def _echo_auth_error(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        body: dict[str, Any] = {"error": {"message": f"bad request; headers were Authorization: "
                                                     f"{self._authorization(model)}", "code": 400}}
        payload = json.dumps(body).encode()
        w.write(f"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                "Connection: close\r\n\r\n".encode() + payload)
        await w.drain()


_KINDS = frozenset({"gzip_stream", "gzip_error", "gzip_json", "reset_after_finish", "unterminated",
                    "idle_after_finish", "echo_auth", "echo_auth_error"})
