"""A scripted loopback upstream for the router's tests and benchmark (never used by the router itself).

A raw asyncio HTTP/1.1 server on 127.0.0.1 (port 0) in a background thread, so a test controls every
byte and can cut a connection mid-stream. Each request's behaviour is looked up by the `model` field of
its body (the router sends each tier's own model), and every request is recorded for assertions.

    with FakeUpstream({"t1": Script("stall_after_headers"), "t2": Script("ok")}) as up:
        up.base_url, up.requests

Kinds: ok, slow_first (delay_s before the first content), stall_after_headers (a keep-alive, then
silence for delay_s), die_before_content (headers and a role-only chunk, then a cut), die_after_first
(one content chunk, then a cut), stall_after_first (one content chunk, then silence for delay_s),
error_chunk_after_first, http_error (status, retry_after, no stream), raw (`body` sent as is with `status`
and `content_type`: a real capture, streamed in one chunk or as a whole body), empty_stop (no content, finish
stop), tool_call (one call of `tool` with `arguments`, streamed in fragments or whole).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Script:
    kind: str = "ok"
    text: str = "Hello from the upstream"
    delay_s: float = 0.0
    status: int = 429
    retry_after: str | None = None
    provider: str = "Fake"
    prompt_tokens: int = 42
    body: bytes = b""  # raw: the bytes sent
    content_type: str = "text/event-stream"  # raw
    tool: str = "get_weather"  # tool_call
    arguments: str = '{"city": "Paris"}'  # tool_call


@dataclass(frozen=True)
class Received:
    model: str | None
    body: bytes
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def _chunk(
    model: str,
    provider: str,
    delta: dict[str, Any],
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> bytes:
    doc: dict[str, Any] = {
        "id": "gen-1-fake",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "provider": provider,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish}],
    }
    if usage is not None:
        doc["usage"] = usage
    return b"data: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n"


def _http_chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class FakeUpstream:
    def __init__(self, scripts: Mapping[str, Script]) -> None:
        self.scripts = dict(scripts)
        self.requests: list[Received] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def for_model(self, model: str) -> list[Received]:
        return [r for r in self.requests if r.model == model]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {
                k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            try:
                model = json.loads(body).get("model")
            except ValueError:
                model = None
            self.requests.append(Received(model, body, headers))
            script = self.scripts.get(model or "", Script("http_error", status=404))
            await self._respond(script, model or "", json.loads(body).get("stream") is True, writer)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.CancelledError):
            pass  # a cut, a bad request, or shutdown: the connection just ends
        finally:
            writer.close()

    async def _raw(self, s: Script, w: asyncio.StreamWriter) -> None:
        w.write(
            f"HTTP/1.1 {s.status} X\r\nContent-Type: {s.content_type}\r\nContent-Length: {len(s.body)}\r\n"
            "Connection: close\r\n\r\n".encode() + s.body
        )
        await w.drain()

    async def _tool_call(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": s.tool, "arguments": s.arguments}}
        if not stream:
            doc = {"id": "gen-1-fake", "object": "chat.completion", "created": 1, "model": model,
                   "provider": s.provider,
                   "choices": [{"index": 0, "finish_reason": "tool_calls", "native_finish_reason": "tool_calls",
                                "message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
            await self._raw(Script("raw", status=200, body=json.dumps(doc).encode(), content_type="application/json"),
                            w)
            return
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n"
        )
        head = {**call, "function": {"name": s.tool, "arguments": ""}}
        w.write(_http_chunk(_chunk(model, s.provider, {"role": "assistant", "content": None, "tool_calls": [head]})))
        half = len(s.arguments) // 2
        for piece in (s.arguments[:half], s.arguments[half:]):
            frag = {"index": 0, "function": {"arguments": piece}}
            w.write(_http_chunk(_chunk(model, s.provider, {"tool_calls": [frag]})))
        w.write(_http_chunk(_chunk(model, s.provider, {}, "tool_calls")))
        w.write(_http_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await w.drain()

    async def _respond(self, s: Script, model: str, stream: bool, w: asyncio.StreamWriter) -> None:
        if s.kind == "empty_stop":
            s = Script("ok", text="", provider=s.provider)
        if s.kind == "raw":
            await self._raw(s, w)
        elif s.kind == "tool_call":
            await self._tool_call(s, model, stream, w)
        elif s.kind == "http_error":
            await self._http_error(s, w)
        elif stream:
            await self._stream(s, model, w)
        else:
            await self._whole(s, model, w)

    async def _http_error(self, s: Script, w: asyncio.StreamWriter) -> None:
        payload = json.dumps({"error": {"message": "Provider returned error", "code": s.status}}).encode()
        extra = f"Retry-After: {s.retry_after}\r\n" if s.retry_after is not None else ""
        w.write(
            f"HTTP/1.1 {s.status} Error\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
            + payload
        )
        await w.drain()

    async def _whole(self, s: Script, model: str, w: asyncio.StreamWriter) -> None:
        """A non-streamed answer (`slow_first` waits `delay_s` first)."""
        if s.kind == "slow_first":
            await asyncio.sleep(s.delay_s)
        doc = {
            "id": "gen-1-fake",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "provider": s.provider,
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": s.text}}
            ],
            "usage": _usage(s.prompt_tokens, _words(s.text)),
        }
        payload = json.dumps(doc).encode()
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
            + payload
        )
        await w.drain()

    async def _stream(self, s: Script, model: str, w: asyncio.StreamWriter) -> None:
        """A streamed answer word by word, cut or stalled where the script's kind says."""
        words = _words(s.text)
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"X-Generation-Id: gen-1-fake\r\nConnection: close\r\n\r\n"
        )
        w.write(_http_chunk(b": OPENROUTER PROCESSING\n\n"))
        await w.drain()
        if s.kind == "stall_after_headers":
            await asyncio.sleep(s.delay_s or 30)
            return
        w.write(_http_chunk(_chunk(model, s.provider, {"role": "assistant", "content": ""})))
        await w.drain()
        if s.kind == "die_before_content":
            w.transport.abort()
            return
        if s.kind == "slow_first":
            await asyncio.sleep(s.delay_s)
        for i, word in enumerate(words):
            w.write(_http_chunk(_chunk(model, s.provider, {"content": word, "role": "assistant"})))
            await w.drain()
            if i == 0 and await self._fault_after_first(s, model, w):
                return
        w.write(_http_chunk(_chunk(model, s.provider, {"content": "", "role": "assistant"}, "stop")))
        usage = _usage(s.prompt_tokens, words)
        w.write(_http_chunk(_chunk(model, s.provider, {"content": "", "role": "assistant"}, "stop", usage)))
        w.write(_http_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await w.drain()

    async def _fault_after_first(self, s: Script, model: str, w: asyncio.StreamWriter) -> bool:
        """After the first word: a stall, a cut, or an error chunk (True: the stream ends here)."""
        if s.kind == "stall_after_first":
            await asyncio.sleep(s.delay_s or 30)
        elif s.kind == "die_after_first":
            await asyncio.sleep(0.05)
            w.transport.abort()
        elif s.kind == "error_chunk_after_first":
            err = {
                "id": "gen-1-fake",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "provider": s.provider,
                "error": {"code": 502, "message": "upstream died"},
                "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
            }
            w.write(_http_chunk(b"data: " + json.dumps(err).encode() + b"\n\n") + b"0\r\n\r\n")
            await w.drain()
        else:
            return False
        return True

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]

        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()
        loop.close()

    @contextmanager
    def running(self) -> Iterator[FakeUpstream]:
        ready = threading.Event()
        thread = threading.Thread(target=self._run, args=(ready,), daemon=True, name="fake-upstream")
        thread.start()
        ready.wait(5)
        try:
            yield self
        finally:
            loop = self._loop
            if loop is not None:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=5)
                loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def __enter__(self) -> FakeUpstream:
        self._cm = self.running()
        return self._cm.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._cm.__exit__(None, None, None)


def _words(text: str) -> list[str]:
    """The answer's words as streamed: each but the last with its trailing space."""
    words = [word + " " for word in text.split(" ")]
    words[-1] = words[-1].rstrip()
    return words


def _usage(prompt_tokens: int, words: list[str]) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": len(words),
            "total_tokens": prompt_tokens + len(words)}
