"""The ignore list's records: the builtin and operational exclusions, and the merged list of one model.

tasks/core/exclusions.py merges the layers into an `IgnoreList`; the router and the API serve it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tasks.core.vocabulary import Layer


@dataclass(frozen=True, slots=True)
class OperationalExclusion:
    """An admin's runtime exclusion (the operational layer)."""

    tag: str
    reason: str
    who: str
    added_at: datetime
    model: str | None = None  # None = every model
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class BuiltinExclusion:
    """A reviewed entry of exclusions.toml: a tag or provider slug, optional model."""

    tag: str
    reason: str
    evidence: str
    date: str
    model: str | None = None


@dataclass(frozen=True, slots=True)
class IgnoreEntry:
    tag: str
    layer: Layer
    reason: str
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class IgnoreList:
    """The merged ignore list of one model: `ignore` is the sorted union of the entries' tags."""

    model: str
    ignore: tuple[str, ...]
    entries: tuple[IgnoreEntry, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "model": self.model,
            "ignore": list(self.ignore),
            "entries": [
                {
                    "tag": e.tag,
                    "layer": str(e.layer),
                    "reason": e.reason,
                    "until": e.until.isoformat() if e.until else None,
                }
                for e in self.entries
            ],
        }
