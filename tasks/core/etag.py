"""Entity tags of the canary's published lists (pure): what the exporter sends (`ETag`) and what a router
polling it sends back (`If-None-Match`), so an unchanged list costs a 304 and no body (RFC 9110 8.8.3, 13.1.2).

    tag = strong_etag(data)                        # '"<sha256 prefix>"': the same bytes, the same tag, anywhere
    none_match('W/"a", "b"', '"b"')                # True: the client holds it (-> 304)

The tag is computed from the bytes, never from a time or an inode: a router computes it from its own copy
after a restart and asks with it, and two exporters of the same file agree.
"""

from __future__ import annotations

import hashlib


def strong_etag(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


def none_match(if_none_match: str | None, etag: str) -> bool:
    """Whether an `If-None-Match` header names `etag` (the weak comparison a GET uses: `W/` is ignored; `*`
    matches any current representation)."""
    for part in (if_none_match or "").split(","):
        tag = part.strip()
        if tag == "*" or (tag.removeprefix("W/") == etag and tag):
            return True
    return False
