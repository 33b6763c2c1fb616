"""The probe tests' loopback server (tests/integration/test_probe*.py): it plays exact bytes, step by step (bytes to
send, a float to sleep, HANG: keep the socket open and silent, RST: abort the connection); `run` probes it with the
shell the autouse `shell` fixture picks (the probe worker's event loop, or a thread's client)."""

from __future__ import annotations

import asyncio
import json
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tasks.config import CanaryConfig
from tasks.core.types import Attempt, Contract, Endpoint
from tasks.probe.attempt import probe_once, probe_once_async
from tasks.probe.sockets import new_async_client
from tasks.runtime.clock import SystemClock
from tests.support.http_read import read_request

API_KEY = "sk-or-v1-0123456789abcdef0123456789abcdef"
ENDPOINT = Endpoint(model="meta-llama/llama-3.3-70b-instruct", tag="deepinfra/fp8", provider_name="DeepInfra")
CFG = CanaryConfig(
    ttft_s=1.0, connect_timeout_s=2.0, read_timeout_s=3.0, probe_budget_s=5.0, text_cap_bytes=4096
)
HANG = "hang"
RST = "rst"
Step = bytes | float | str

SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Connection: close\r\n\r\n"
)
KEEPALIVE = b": OPENROUTER PROCESSING\n\n"
DONE = b"data: [DONE]\n\n"


def chunk(
    content: str | None = None, *, provider: str = "DeepInfra", finish: str | None = None, **extra: Any
) -> bytes:
    delta: dict[str, Any] = {"role": "assistant"}
    if content is not None:
        delta["content"] = content
    delta.update(extra.pop("delta", {}))
    body = {
        "id": "gen-1778031306-UD7bR0I1JNCsPvVzlXat",
        "object": "chat.completion.chunk",
        "created": 1778031306,
        "model": ENDPOINT.model,
        "provider": provider,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish}],
        **extra,
    }
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


def http_response(
    status: int, body: bytes, *, content_type: str = "application/json", **headers: str
) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    head += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


@dataclass
class Wire:
    base_url: str
    requests: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)


@contextmanager
def wire_server(steps: list[Step]) -> Iterator[Wire]:
    stop = threading.Event()
    wire = Wire(base_url="")

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            request = read_request(sock)
            if request is None:
                return
            headers, body, _ = request
            wire.requests.append((headers, json.loads(body) if body else {}))
            for step in steps:
                if isinstance(step, bytes):
                    try:
                        sock.sendall(step)
                    except OSError:
                        return
                elif isinstance(step, float):
                    if stop.wait(step):
                        return
                elif step == HANG:
                    stop.wait(30)
                    return
                elif step == RST:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()
                    return

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    wire.base_url = f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    try:
        yield wire
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


_SHELL = ["loop"]


@pytest.fixture(autouse=True, params=["loop", "thread"])
def shell(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which shell `run` probes with: the event loop's (the probe worker's) or a thread's."""
    _SHELL[0] = request.param
    yield request.param
    _SHELL[0] = "loop"


def run(
    steps: list[Step],
    cfg: CanaryConfig = CFG,
    contract: Contract = Contract.TTFT,
    language: str | None = None,
) -> tuple[Attempt, Wire, float]:
    with wire_server(steps) as wire:
        kwargs: dict[str, Any] = dict(base_url=wire.base_url, api_key=API_KEY, endpoint=ENDPOINT, contract=contract,
                                      round_id="r1", attempt_no=1, language=language, cfg=cfg, clock=SystemClock())
        t0 = time.monotonic()
        if _SHELL[0] == "thread":
            with httpx.Client() as client:
                attempt = probe_once(client, **kwargs)
        else:
            async def on_a_loop() -> Attempt:
                async with new_async_client() as client:  # the probe worker's (tasks/probe/sockets.py)
                    return await probe_once_async(client, **kwargs)

            attempt = asyncio.run(on_a_loop())
        return attempt, wire, time.monotonic() - t0
