"""The canary's ignore lists over HTTP: `GET /lists/<model-slug>.json` on the exporter (`canary metrics`,
`canary serve --metrics-port`), for routers on other hosts (`[router] lists_url`, provider_canary/router/lists_poll.py).

    200  the published file's bytes (tasks/ignore_list/publish.py writes them atomically), with `ETag` (from the bytes:
         tasks/core/etag.py), `Last-Modified` (when the canary wrote it) and `Cache-Control: no-cache`
    304  `If-None-Match` names the current tag: no body, the same `ETag` and `Last-Modified` (a router keeps
         its copy's age true to the canary's write though the bytes did not change)
    404  no published list of that slug in any of the exporter's publish directories (a model it does not
         know, or one not published yet); a name outside the slug alphabet is a 404 too (no path escapes)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tasks.config import CanaryConfig
from tasks.core.etag import none_match, strong_etag

PREFIX = "/lists/"
#: `tasks.core.plan.model_slug`'s alphabet: lower-case letters, digits and single dashes.
_SLUG = re.compile(r"^/lists/([a-z0-9]+(?:-[a-z0-9]+)*)\.json$")


@dataclass(frozen=True)
class ListReply:
    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


def publish_dirs(dbs: Sequence[str | os.PathLike[str]], cfg: CanaryConfig) -> list[Path]:
    """Where each database's lists are published (tasks/ignore_list/publish.py `publish_dir`), in order."""
    from tasks.ignore_list.publish import publish_dir

    return list(dict.fromkeys(publish_dir(replace(cfg, db_path=str(db))) for db in dbs))


def list_reply(dirs: Sequence[Path], path: str, if_none_match: str | None) -> ListReply:
    """The answer to `GET <path>` (its query string ignored)."""
    found = _SLUG.match(path.split("?", 1)[0])
    slug = found.group(1) if found else None
    for directory in dirs if slug else ():
        try:
            with open(directory / f"{slug}.json", "rb") as fh:
                data, mtime = fh.read(), os.fstat(fh.fileno()).st_mtime
        except OSError:
            continue
        etag = strong_etag(data)
        headers = (("ETag", etag), ("Last-Modified", formatdate(mtime, usegmt=True)), ("Cache-Control", "no-cache"))
        if none_match(if_none_match, etag):
            return ListReply(304, headers)
        return ListReply(200, (("Content-Type", "application/json"), *headers), data)
    what = f"no published ignore list {slug}.json" if slug else "not a list: /lists/<model-slug>.json"
    return ListReply(404, (("Content-Type", "application/json"),), json.dumps({"error": what}).encode() + b"\n")


def serve_list(handler: BaseHTTPRequestHandler, dirs: Sequence[Path]) -> None:
    """Write `list_reply` for the handler's request."""
    reply = list_reply(dirs, handler.path, handler.headers.get("If-None-Match"))
    handler.send_response(reply.status)
    for name, value in reply.headers:
        handler.send_header(name, value)
    if reply.status != 304:  # a 304's Content-Length would have to be the 200's (RFC 9110 8.6)
        handler.send_header("Content-Length", str(len(reply.body)))
    handler.end_headers()
    if reply.body:
        handler.wfile.write(reply.body)
