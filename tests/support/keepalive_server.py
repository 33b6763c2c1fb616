"""A loopback HTTP/1.1 upstream with keep-alive that counts its connections: does a client give its connection
back after a stream's [DONE] (tasks/probe/drain.py)? Used by the probe's and the router's keep-alive tests."""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.http_read import read_request

#: With `stay_open`, the chunked body's last chunk comes this long after [DONE].
STAY_OPEN_S = 3.0
MODEL = "acme/tiny-1"


def _chunk(payload: bytes) -> bytes:
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


def _event(delta: dict[str, object], finish: str | None = None) -> bytes:
    chunk = {"id": "gen-1", "provider": "Fake", "model": MODEL, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


REPLY_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
REPLY_BODY = _chunk(_event({"role": "assistant", "content": "Hello there"}) + _event({}, "stop") + b"data: [DONE]\n\n")


class KeepAliveServer:
    """Loopback HTTP/1.1 with keep-alive: every request on a connection gets the reply; `stay_open`: the chunked
    body's last chunk comes `STAY_OPEN_S` after [DONE]. Counts the connections it accepted."""

    def __init__(self, stay_open: bool, tail_s: tuple[float, float] | None = None,
                 answers: int | None = None, reset: bool = False) -> None:
        """`tail_s` (low, high): the last chunk comes a uniform draw from that range after [DONE] instead.
        `answers`: a connection answers that many requests, then closes as the next one comes in, unanswered (a
        server's keep-alive timeout meeting a request in flight); with `reset`, a reset instead of a close."""
        self.stay_open, self.connections = stay_open, 0
        self.answers, self.reset = answers, reset
        self.tail_s = tail_s or ((STAY_OPEN_S, STAY_OPEN_S) if stay_open else (0.0, 0.0))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/api/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data, answered = b"", 0
            while True:
                try:
                    request = read_request(conn, data)
                    if request is None:
                        return
                    if self.answers is not None and answered >= self.answers:
                        if self.reset:  # SO_LINGER 0: close sends a reset
                            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        return
                    answered += 1
                    data = request[2]
                    conn.sendall(REPLY_HEAD + REPLY_BODY)
                    if self.tail_s[1] > 0:
                        time.sleep(random.uniform(*self.tail_s))
                    conn.sendall(b"0\r\n\r\n")
                except OSError:  # the client closed it
                    return

    def close(self) -> None:
        self.listener.close()


@contextmanager
def servers_both_ways() -> Iterator[dict[bool, KeepAliveServer]]:
    """Two servers, keyed by `stay_open`: one ends its bodies at [DONE], one goes on `STAY_OPEN_S` after it."""
    made = {stay: KeepAliveServer(stay) for stay in (False, True)}
    try:
        yield made
    finally:
        for server in made.values():
            server.close()
