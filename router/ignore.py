"""The canary's published ignore lists, read by the router on every request and re-read on change.

Path of a tier's list: its `ignore_file` if set, else `<publish_dir>/<model-slug>.json` where the model is
the tier's `canary_model` (default: the tier's `model`) and the slug is `tasks.core.plan.model_slug` (the same
one the publisher uses). `canary_model = ""` turns the merge off for that tier.

Each request costs one `stat()`; the file is parsed again only when its (mtime_ns, size, inode) changes.
A missing file means an empty list. A file that cannot be parsed (say, caught mid-write by a non-atomic
writer) keeps the last good list of that path and logs one warning per change.
"""

from __future__ import annotations

import logging
from pathlib import Path

from router.payload import parse_ignore_json
from router.routes import Tier
from tasks.core.plan import model_slug

log = logging.getLogger("router.ignore")

_Stamp = tuple[int, int, int]


def ignore_path(tier: Tier, publish_dir: Path) -> Path | None:
    if tier.ignore_file:
        return Path(tier.ignore_file)
    model = tier.model if tier.canary_model is None else tier.canary_model
    if not model:
        return None
    return publish_dir / f"{model_slug(model)}.json"


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
        model = tier.model if tier.canary_model is None else tier.canary_model
        return self.read(path, model if not tier.ignore_file else None)

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
