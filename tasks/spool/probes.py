"""A round's probes kept as they end, beside its journal, so that a round whose process dies loses none (shell).

    <db>.spool/<model slug>@<time>.probes.jsonl
        {"endpoint": {...}, "attempts": [<attempts rows>]}     one line per endpoint whose probes all ended
        {"complete": true}                                    once the round's probing ended

Lines are appended as each endpoint's probes end (`ProbeJournal.endpoint`, called from the probing) and when the
probing ends (`complete`); flushed, not fsynced: the file must outlive its process (a SIGKILL, an OOM kill, a
worker gone), not a power cut. It goes with the journal at the round's end (`Journal.finish`). Attempts are
stored as their table rows (redacted, as they would land), like a deferred round's spool file.

When the round's process is gone, the next round of its model in that database lands them
(tasks/round/write_window.py `land_leftovers`): judged and settled as the round they were (its probing had
ended) or, when it died mid-probe, as a partial round of the endpoints whose probes had all ended (the others
are absent: their streaks freeze, as in a confirmation round). A line cut by the kill is skipped. A file
that cannot be written is given up without a word here: the journal's own step reports the disk (a round that
cannot keep its journal fails loudly at its end).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tasks.core.types import Attempt, Endpoint
from tasks.spool.journal import JOURNAL_SUFFIX, PROBES_SUFFIX, endpoint_from_json, endpoint_json, spool_dirs
from tasks.store.records import attempt_from_row, attempt_row


def probes_name(journal_name: str) -> str:
    """The probes file of the journal named `journal_name`."""
    return journal_name.removesuffix(JOURNAL_SUFFIX) + PROBES_SUFFIX


@dataclass
class ProbeJournal:
    """Appends a round's probes to `path` (None: nothing kept, e.g. a round outside a journal)."""

    path: Path | None
    _kept: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def beside(cls, journal_path: Path) -> ProbeJournal:
        return cls(journal_path.with_name(probes_name(journal_path.name)))

    def endpoint(self, endpoint: Endpoint, attempts: Sequence[Attempt]) -> None:
        """Every probe of `endpoint` ended: keep its attempts."""
        with self._lock:
            if endpoint.tag in self._kept:
                return
            self._kept.add(endpoint.tag)
            self._append({"endpoint": endpoint_json(endpoint), "attempts": [attempt_row(a) for a in attempts]})

    def complete(self, endpoints: Iterable[Endpoint], attempts: Sequence[Attempt]) -> None:
        """The round's probing ended: the endpoints not kept yet, then the mark that nothing is missing."""
        for e in endpoints:
            self.endpoint(e, [a for a in attempts if a.tag == e.tag])
        with self._lock:
            self._append({"complete": True})

    def _append(self, obj: dict[str, Any]) -> None:
        if self.path is None:
            return
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(obj, default=_encode) + "\n")
        except OSError:  # a full disk: the journal's step says so; the round goes on
            self.path = None


def _encode(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot journal {type(value).__name__}")


@dataclass(frozen=True)
class KeptProbes:
    """What a dead round's probes file holds."""

    endpoints: tuple[Endpoint, ...]
    attempts: tuple[Attempt, ...]
    complete: bool  # its probing had ended: every planned endpoint is here
    path: Path


def kept_probes(db_path: str, journal_name: str) -> KeptProbes | None:
    """The probes a round kept beside its journal `journal_name` (in either spool directory), None when it kept
    none (it died before an endpoint's probes ended, or it kept no file)."""
    for directory in spool_dirs(db_path):
        path = directory / probes_name(journal_name)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        endpoints: dict[str, Endpoint] = {}
        attempts: list[Attempt] = []
        complete = False
        for line in lines:
            try:
                obj = json.loads(line)
                if obj.get("complete"):
                    complete = True
                    continue
                e = endpoint_from_json(obj["endpoint"])
                rows = [attempt_from_row({**r, "started_at": datetime.fromisoformat(r["started_at"])})
                        for r in obj["attempts"]]
            except (ValueError, KeyError, TypeError):  # the line the kill cut short
                continue
            if e.tag not in endpoints:
                endpoints[e.tag] = e
                attempts.extend(rows)
        if endpoints:
            return KeptProbes(tuple(endpoints.values()), tuple(attempts), complete, path)
    return None
