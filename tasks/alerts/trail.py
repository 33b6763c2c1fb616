"""Which alert a delivery process is posting, in a small file beside the database (shell).

When a delivery process dies mid-batch, its claimed alerts have an unknown fate. Where Slack's history can be
read the next delivery asks it; where it cannot (a webhook, a channel given by name) this trail tells which
posts completed (not posted again), which one was in flight (posted again: a possible duplicate) and which
never started (posted: no duplicate).

    <db>.spool/delivery-<host>-<pid>-<start>.json   {"claimer", "claimed", "posted": [keys], "posting": key}

Keys are `post_key`s. The file is rewritten (temp file + rename, no fsync: it must outlive its process, not a
power cut; a lost file only means more alerts are counted as possible duplicates) before and after each post,
and deleted once the results are recorded. A trail that cannot be written is dropped: delivery goes on.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tasks.core.render.postable import post_key
from tasks.spool.journal import spool_dir

PREFIX = "delivery-"


@dataclass
class Trail:
    path: Path | None
    claimer: str
    claimed: list[str]
    posted: list[str] = field(default_factory=list)
    posting: str | None = None

    def before(self, key: str) -> None:
        self.posting = post_key(key)
        self._write()

    def after(self, key: str, *, known: bool, sent: bool) -> None:
        """The post of `key` ended: sent, or refused for sure (`known`); an unknown fate stays `posting`."""
        if sent:
            self.posted.append(post_key(key))
        if known:
            self.posting = None
        self._write()

    def close(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None

    def _write(self) -> None:
        if self.path is None:
            return
        payload = {"claimer": self.claimer, "claimed": self.claimed, "posted": self.posted,
                   "posting": self.posting}
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh)
            os.replace(tmp, self.path)
        except OSError:  # a full disk: go on without a trail (the next delivery counts, as before)
            self.path = None


def open_trail(db_path: str, claimer: str, keys: Iterable[str]) -> Trail:
    """Start this process's trail for a batch of claimed alerts."""
    directory = spool_dir(db_path)
    safe = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in claimer.replace("|", "-"))[:120]
    trail = Trail(directory / f"{PREFIX}{safe}.json", claimer, [post_key(k) for k in keys])
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        trail.path = None
    trail._write()
    return trail


@dataclass(frozen=True)
class DeadTrails:
    """What the trails of dead delivery processes say, by post key."""

    claimed: frozenset[str] = frozenset()
    posted: frozenset[str] = frozenset()
    posting: frozenset[str] = frozenset()
    paths: tuple[Path, ...] = ()

    def remove(self) -> None:
        for p in self.paths:
            p.unlink(missing_ok=True)


def dead_trails(db_path: str, is_dead: Callable[[str | None], bool]) -> DeadTrails:
    directory = spool_dir(db_path)
    claimed: set[str] = set()
    posted: set[str] = set()
    posting: set[str] = set()
    paths: list[Path] = []
    for path in directory.glob(PREFIX + "*.json") if directory.is_dir() else ():
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
            if not is_dead(obj["claimer"]):
                continue
            claimed.update(obj["claimed"])
            posted.update(obj["posted"])
            if obj.get("posting"):
                posting.add(obj["posting"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        paths.append(path)
    return DeadTrails(frozenset(claimed), frozenset(posted), frozenset(posting), tuple(paths))
