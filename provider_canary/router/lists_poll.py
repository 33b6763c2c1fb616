"""The canary's ignore lists over HTTP, for a router on another host: `[router] lists_url` (the canary exporter's
`/lists`, tasks/ignore_list/endpoint.py) polled every `lists_poll_s` seconds.

Each pass asks, for every list the tiers read (provider_canary/router/ignore.py `ignore_path`: a tier's `canary_model`,
else its `model`; not a tier with its own `ignore_file`), `GET <lists_url>/<model-slug>.json` with `If-None-Match` (the
tag of the copy it holds, worked out from the copy's bytes: tasks/core/etag.py, so a restarted router asks
conditionally too), and keeps the **last good copy on its own disk**, in `publish_dir` (default `published/`
beside the routes file), where provider_canary/router/ignore.py reads it like a published file. So:

* 200: the copy is replaced atomically when it is a published list of that model (else kept, one warning);
* 304, 200: the copy's mtime is set to the canary's `Last-Modified`, so its age and staleness (`/healthz`,
  `canary_router_ignore_list_age_seconds`, `_stale`) are the canary's, as with a shared file;
* 404 (the canary does not know the model), another status, or no answer: the copy stays (a restart while the
  canary is unreachable still excludes), ages, and is stale after two canary intervals; said in one line when
  it begins and once when it ends (tasks/runtime/quiet_log.py). No answer ends the pass (the canary is down).

The first pass runs at start, before the router reports its lists (provider_canary/router/ignore.py `report`); then a
task of the app's lifespan (`run`). A `lists_url` holds no credentials, query or fragment
(provider_canary/router/routes_schema.py: the one base-URL rule of tasks/core/urls.py), and the copies never go into the
canary's own publish directory (the one holding its `.canary-db` marker).

    canary_router_lists_polls_total{result}    ok (a new copy), not_modified, not_found, refused, error
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry, Counter

from provider_canary.router.ignore import ignore_path
from provider_canary.router.payload import parse_ignore_json
from provider_canary.router.routes import Routes
from tasks.core.etag import strong_etag
from tasks.core.plan import model_slug
from tasks.errors import RoutesError
from tasks.runtime.quiet_log import QuietLog

log = logging.getLogger("router.lists")


class Unanswered(Exception):
    """The canary answered a list with a status that is none of 200, 304, 404."""

RESULTS = ("ok", "not_modified", "not_found", "refused", "error")
#: The canary's marker in its own publish directory (tasks/ignore_list/publish.py OWNER_FILE).
CANARY_MARKER = ".canary-db"


def polls_counter(registry: CollectorRegistry) -> Counter:
    return Counter("canary_router_lists_polls", "Requests for the canary's lists at lists_url, by result (ok: a new "
                   "copy kept; not_modified; not_found; refused: not a list of that model; error: no answer)",
                   ("result",), registry=registry)


@dataclass(frozen=True)
class Wanted:
    slug: str
    model: str
    path: Path  # the local copy


def wanted(routes: Routes, directory: Path) -> list[Wanted]:
    """The lists the tiers read from `directory`, once each."""
    out: dict[str, Wanted] = {}
    for route in routes.routes:
        for tier in route.tiers:
            path = ignore_path(tier, directory)
            if path is None or tier.ignore_file:
                continue
            model = tier.model if tier.canary_model is None else tier.canary_model
            out.setdefault(model_slug(model), Wanted(model_slug(model), model, path))
    return list(out.values())


def _last_modified(headers: Mapping[str, str]) -> float | None:
    try:
        return parsedate_to_datetime(headers["last-modified"]).timestamp()
    except (KeyError, TypeError, ValueError, IndexError):
        return None


class ListsPoller:
    def __init__(self, url: str, directory: Path, routes: Routes, poll_s: float) -> None:
        if (directory / CANARY_MARKER).exists():
            raise RoutesError(f"routes: router.lists_url: publish_dir {directory} is the canary's own publish "
                              "directory (it holds .canary-db); give the router's copies a directory of its own")
        self.url, self.directory, self.poll_s = url, directory, poll_s
        self.lists = wanted(routes, directory)
        self.timeout = httpx.Timeout(max(1.0, min(10.0, 2 * poll_s)))
        self.counter: Counter | None = None  # canary_router_lists_polls_total once attached (`attach`)
        self.tally: dict[str, int] = {}  # what the passes before it counted
        self.quiet = QuietLog(log)
        self.last_ok: float | None = None  # time.time() of the last pass every list answered
        self.error: str | None = None
        self._etags: dict[Path, str] = {}

    def _count(self, result: str) -> None:
        if self.counter is not None:
            self.counter.labels(result).inc()
        else:
            self.tally[result] = self.tally.get(result, 0) + 1

    # -- what a pass does with each answer ---------------------------------------------------------------------
    def _etag(self, want: Wanted) -> str | None:
        """The tag of the copy held (none: no copy, say one deleted by hand, which the next pass fetches again)."""
        if not want.path.exists():
            self._etags.pop(want.path, None)
            return None
        if want.path not in self._etags:
            try:
                self._etags[want.path] = strong_etag(want.path.read_bytes())
            except OSError:
                return None
        return self._etags[want.path]

    def _headers(self, want: Wanted) -> dict[str, str]:
        etag = self._etag(want)
        return {"If-None-Match": etag} if etag else {}

    def _keep(self, want: Wanted, status: int, headers: Mapping[str, str], body: bytes) -> str:
        """Apply one answer to the local copy; returns the result counted."""
        if status == 304:
            self._touch(want, headers)
            return "not_modified"
        if status == 404:
            self.quiet.say(f"404 {want.slug}", f"lists: {self.url}/{want.slug}.json: the canary has no list for "
                                               f"{want.model} (404); keeping the copy there is, if any")
            return "not_found"
        if status != 200:
            raise Unanswered(f"HTTP {status}")
        self.quiet.end(f"404 {want.slug}")
        text = body.decode("utf-8", "replace")
        if parse_ignore_json(text, want.model) is None:
            self.quiet.say(f"refused {want.slug}", f"lists: {self.url}/{want.slug}.json is not a published ignore "
                                                   f"list of {want.model}; keeping the last good copy")
            return "refused"
        self.quiet.end(f"refused {want.slug}")
        if self._etags.get(want.path) != strong_etag(body):
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{want.slug}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.chmod(tmp, 0o644)  # readable by the applications beside the router, as the canary's files are
            os.replace(tmp, want.path)
            self._etags[want.path] = strong_etag(body)
        self._touch(want, headers)
        return "ok"

    def _touch(self, want: Wanted, headers: Mapping[str, str]) -> None:
        """The copy's mtime is the canary's write (`Last-Modified`): its age is the list's age."""
        at = _last_modified(headers)
        try:
            if at is not None and abs(want.path.stat().st_mtime - at) >= 1:
                os.utime(want.path, (at, at))
        except OSError:
            pass

    def _failed(self, exc: Exception) -> None:
        self._count("error")
        if isinstance(exc, OSError):  # the copy could not be written here
            self.error = f"cannot write in {self.directory}: {type(exc).__name__}: {exc.strerror or exc}"
            line = f"lists: {self.error}"
        else:
            self.error = str(exc) if isinstance(exc, Unanswered) else type(exc).__name__
            line = f"lists: {self.url} does not answer ({self.error})"
        self.quiet.say("pass", f"{line}; the tiers go on with the last good copies (stale after two canary intervals)")

    def _passed(self) -> None:
        self.last_ok, self.error = time.time(), None
        self.quiet.end("pass", f"lists: {self.url} answers again")

    # -- the passes --------------------------------------------------------------------------------------------
    def poll_once(self) -> None:
        """One pass, blocking (at start)."""
        with httpx.Client(timeout=self.timeout, trust_env=False) as client:
            try:
                for want in self.lists:
                    r = client.get(f"{self.url}/{want.slug}.json", headers=self._headers(want))
                    self._count(self._keep(want, r.status_code, r.headers, r.content))
            except (httpx.HTTPError, Unanswered, OSError) as exc:
                return self._failed(exc)
        self._passed()

    async def poll_async(self, client: httpx.AsyncClient) -> None:
        try:
            for want in self.lists:
                r = await client.get(f"{self.url}/{want.slug}.json", headers=self._headers(want))
                self._count(await asyncio.to_thread(self._keep, want, r.status_code, r.headers, r.content))
        except (httpx.HTTPError, Unanswered, OSError) as exc:
            return self._failed(exc)
        self._passed()

    async def run(self) -> None:
        """A pass every `poll_s` seconds (the next at once when one overran), until cancelled."""
        async with httpx.AsyncClient(timeout=self.timeout, trust_env=False) as client:
            next_at = time.monotonic()
            while True:
                next_at += self.poll_s
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                next_at = max(next_at, time.monotonic() - self.poll_s)
                try:
                    await self.poll_async(client)
                except Exception as exc:  # a bug: said once, and the next pass tries again (never a silent stop)
                    self._count("error")
                    self.quiet.say("pass", f"lists: a pass failed: {type(exc).__name__}: {str(exc)[:200]}")

    def health(self) -> dict[str, object]:
        return {"url": self.url, "poll_s": self.poll_s, "lists": len(self.lists), "error": self.error,
                "last_ok_age_s": round(time.time() - self.last_ok, 1) if self.last_ok is not None else None}


def start_poller(routes: Routes) -> ListsPoller | None:
    """The poller of `routes` (None without `lists_url`), its first pass done."""
    settings = routes.settings
    if not settings.lists_url:
        return None
    poller = ListsPoller(settings.lists_url, Path(settings.publish_dir), routes, settings.lists_poll_s)
    poller.poll_once()
    return poller


def attach(poller: ListsPoller | None, counter: Counter) -> None:
    """Count the poller's results in `counter` from now on, and what it counted before (each series from 0)."""
    if poller is not None:
        for result in RESULTS:
            counter.labels(result).inc(poller.tally.get(result, 0))
        poller.counter = counter
