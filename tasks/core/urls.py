"""The one base-URL rule (pure): what every configured URL the project sends requests to must be.

canary.toml's `base_url`, `prometheus_url`, `runbook_base_url` and `grafana_url` (tasks/config/schema.py), a
routes file's tier `base_url` and `[router] lists_url` (provider_canary/router/routes_schema.py) all ask `url_fault`: an
http(s) URL with a host, never `user:password@` (httpx would send it as HTTP Basic in place of the API key, and
an upstream echoing that header would carry a derived form of the password into replies), and, where the
caller appends a path to it, no query or fragment (a key there would land in events, metrics and logs). Each
file keeps its own one-line wording of a fault; the rule is here, once.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit


class UrlFault(StrEnum):
    NOT_HTTP = "not_http"  # not a string, not http(s), no host, or unparsable
    CREDENTIALS = "credentials"  # a `user:password@` part
    QUERY = "query"  # a query or fragment (even an empty one: a trailing `?` or `#`)


def url_fault(raw: Any, *, path_appended: bool) -> UrlFault | None:
    """The first fault of `raw` as a base URL, or None. `path_appended`: the caller appends a path to it, so a
    query or a fragment is a fault too."""
    if not isinstance(raw, str):
        return UrlFault.NOT_HTTP
    try:
        parts = urlsplit(raw)
        host = parts.hostname
    except ValueError:
        return UrlFault.NOT_HTTP
    if parts.scheme not in ("http", "https") or not host:
        return UrlFault.NOT_HTTP
    if "@" in parts.netloc:
        return UrlFault.CREDENTIALS
    if path_appended and (parts.query or parts.fragment or raw.endswith(("?", "#"))):
        return UrlFault.QUERY
    return None


def base_url(raw: str) -> str:
    """A base URL as the project keeps it: without its trailing slashes (a path is appended to it)."""
    return raw.rstrip("/")


def without_query(url: str) -> str:
    """`url` cut at its query or fragment (either may hold a key: never shown)."""
    return url.split("?", 1)[0].split("#", 1)[0]
