"""Reading one HTTP/1.1 request off a socket, for the tests' scripted loopback servers."""

from __future__ import annotations

import socket


def read_request(sock: socket.socket, data: bytes = b"") -> tuple[dict[str, str], bytes, bytes] | None:
    """The next request on `sock` (`data`: bytes already read from it): (headers, lower-cased; body; the bytes
    after it, a pipelined next request's), or None when the peer closed first."""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more:
            return None
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        more = sock.recv(65536)
        if not more:
            return None
        rest += more
    return headers, rest[:length], rest[length:]
