"""The canary's published ignore lists, read by the router on every request and re-read on change.

Path of a tier's list: its `ignore_file` if set, else `<publish_dir>/<model-slug>.json` where the model is
the tier's `canary_model` (default: the tier's `model` without its variant suffix, `:nitro`, `:free`...) and
the slug is `tasks.core.plan.model_slug` (the same one the publisher uses). `canary_model = ""` turns the merge
off for that tier.

Each request costs one `stat()`; the file is parsed again only when its (mtime_ns, size, inode) changes.
A missing file means an empty list. A file that cannot be parsed (say, caught mid-write by a non-atomic
writer) keeps the last good list of that path and logs one warning per change.

The router knows its lists: `statuses(routes)` says, per route and tier, which file it reads, whether it
exists, how many tags it holds and how old it is (the canary rewrites it after every round, so a list older
than two canary intervals is `stale`). `report(...)` logs that at start, one line per tier (an ERROR for a
missing list), and `/healthz` and `/metrics` show it (provider_canary/router/ROUTES.md "The canary's lists").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from provider_canary.router.payload import parse_ignore_json
from provider_canary.router.routes import Routes, Tier
from tasks.core.plan import model_slug
from tasks.errors import RoutesError

log = logging.getLogger("router.ignore")

_Stamp = tuple[int, int, int]


def base_model(model: str) -> str:
    """A model id without its variant suffix (`author/slug:nitro` -> `author/slug`): `:nitro`, `:floor`, `:free`,
    `:exacto`... choose how OpenRouter routes the same model, and the canary publishes the model's list."""
    head, slash, name = model.rpartition("/")
    return head + slash + name.partition(":")[0]


def ignore_path(tier: Tier, publish_dir: Path) -> Path | None:
    if tier.ignore_file:
        return Path(tier.ignore_file)
    model = _list_model(tier)
    if not model:
        return None
    return publish_dir / f"{model_slug(model)}.json"


@dataclass(frozen=True, slots=True)
class ListStatus:
    """One tier's canary ignore list as the router sees it now."""

    route: str
    tier: int
    model: str  # the canary model whose list it is
    path: str
    exists: bool
    entries: int = 0
    age_s: float | None = None  # since the file was last written
    stale: bool = False  # older than two canary intervals

    def as_json(self) -> dict[str, object]:
        return {"route": self.route, "tier": self.tier, "model": self.model, "path": self.path,
                "exists": self.exists, "entries": self.entries,
                "age_s": round(self.age_s, 1) if self.age_s is not None else None, "stale": self.stale}


def _list_model(tier: Tier) -> str:
    """Whose list the tier merges: its `canary_model` as written, else its model without the variant suffix."""
    return base_model(tier.model) if tier.canary_model is None else tier.canary_model


class IgnoreLists:
    """mtime-cached reader; one per router process (not shared across threads)."""

    def __init__(self, publish_dir: str | Path) -> None:
        self.publish_dir = Path(publish_dir)
        self._cache: dict[Path, tuple[_Stamp, tuple[str, ...]]] = {}
        self.reads = 0  # parses done (tests and the benchmark check the cache works)

    def for_tier(self, tier: Tier) -> tuple[str, ...]:
        path = ignore_path(tier, self.publish_dir)
        if path is None:
            return ()
        return self.read(path, _list_model(tier) if not tier.ignore_file else None)

    def statuses(self, routes: Routes, wall_now: float | None = None) -> list[ListStatus]:
        """Every tier's list (tiers with the merge turned off have none), in route and tier order."""
        now = time.time() if wall_now is None else wall_now
        stale_after = 2 * routes.settings.canary_interval_s
        out: list[ListStatus] = []
        for route in routes.routes:
            for tier_no, tier in enumerate(route.tiers, start=1):
                path = ignore_path(tier, self.publish_dir)
                if path is None:
                    continue
                try:
                    mtime = path.stat().st_mtime
                except OSError:
                    out.append(ListStatus(route.key, tier_no, _list_model(tier), str(path), False))
                    continue
                age = max(0.0, now - mtime)
                entries = len(self.for_tier(tier))
                out.append(ListStatus(route.key, tier_no, _list_model(tier), str(path), True, entries, age,
                                      age > stale_after))
        return out


    def read(self, path: Path, expected_model: str | None) -> tuple[str, ...]:
        try:
            st = path.stat()
        except OSError:
            self._cache.pop(path, None)
            return ()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            log.warning(
                "ignore list %s unreadable (%s); keeping the last good list", path, type(exc).__name__
            )
            return cached[1] if cached else ()
        self.reads += 1
        parsed = parse_ignore_json(text, expected_model)
        if parsed is None:
            log.warning(
                "ignore list %s is not a published ignore list for %s; keeping the last good list",
                path,
                expected_model,
            )
            previous = cached[1] if cached else ()
            self._cache[path] = (stamp, previous)
            return previous
        self._cache[path] = (stamp, parsed)
        return parsed


def report(statuses: Sequence[ListStatus], require: bool, canary_interval_s: float | None = None) -> None:
    """Log, per route and tier, the list it reads and how many entries it holds (a WARNING when stale); with
    `require`, a missing list is a RoutesError (one line) instead. A missing list is what a fresh install has
    until the canary's first round: with `canary_interval_s`, a WARNING that says so
    (provider_canary/router/list_watch.py makes it an ERROR once an interval has passed without it); without, an ERROR
    at once."""
    missing = [s for s in statuses if not s.exists]
    if require and missing:
        first = missing[0]
        raise RoutesError(
            f"routes: {first.route} tier {first.tier} expects the canary's ignore list {first.path}, which does not "
            f"exist ({len(missing)} missing in all; check publish_dir or ignore_file, or set "
            "router.require_ignore_lists = false to start before the canary has published)"
        )
    for s in statuses:
        if not s.exists and canary_interval_s is not None:
            log.warning("route %s tier %d: waiting for the canary's first round: its ignore list %s does not exist "
                        "yet, so this tier's requests go out without the canary's exclusions for %s (an ERROR if it "
                        "is still missing in %.0f s, one canary interval)", s.route, s.tier, s.path, s.model,
                        canary_interval_s)
        elif not s.exists:
            missing_error(s)
        elif s.stale:
            log.warning("route %s tier %d reads the canary's ignore list %s: %d entries, STALE: last written %.0f s "
                        "ago (more than two canary intervals)", s.route, s.tier, s.path, s.entries, s.age_s or 0)
        else:
            log.info("route %s tier %d reads the canary's ignore list %s: %d entries, written %.0f s ago",
                     s.route, s.tier, s.path, s.entries, s.age_s or 0)


def missing_error(s: ListStatus) -> None:
    log.error("route %s tier %d: the canary's ignore list %s is missing: this tier's requests go out "
              "without the canary's exclusions for %s (check publish_dir or ignore_file)",
              s.route, s.tier, s.path, s.model)
