"""`[router] lists_url` (pure): where a router on another host fetches the canary's lists (router/lists_poll.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from tasks.core.redaction import strip_userinfo
from tasks.errors import RoutesError


def parse_lists_url(raw: Any) -> str | None:
    """`router.lists_url`: an http(s) URL with no credentials, query or fragment ("" or absent: none)."""
    if raw == "" or raw is None:
        return None
    try:
        parts = urlsplit(raw) if isinstance(raw, str) else None
        ok = parts is not None and parts.scheme in ("http", "https") and bool(parts.hostname)
        extra = parts is not None and ("@" in parts.netloc or bool(parts.query or parts.fragment)
                                       or raw.endswith(("?", "#")))
    except ValueError:
        ok, extra = False, False
    if not ok or extra:
        shown = strip_userinfo(raw) if isinstance(raw, str) else raw
        raise RoutesError(f"routes: router.lists_url must be an http(s) URL without credentials, query or fragment, "
                          f"to which /<model-slug>.json is appended (got {shown!r})")
    return str(raw).rstrip("/")
