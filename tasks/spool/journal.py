"""Files next to the database that keep a round's work when the database cannot take it (shell, no DuckDB).

    <db>.spool/<round>.journal.json   written when a round starts, updated at each step, removed at its end:
                                      a journal whose process is gone tells the next round where it died
    <db>.spool/<round>.probes.jsonl   its probes, appended as each endpoint's end (tasks/spool/probes.py): the
                                      next round lands them when the round's process died
    <db>.spool/<round>.round.json     a probed round whose write window could not be had (status deferred):
                                      the next process that gets the lock settles and lands it, then deletes it

Every write is atomic (temp file, fsync, rename), so a crash leaves the old file or the new one, never half.
Attempts are stored as their table rows (redacted, as they would land), so nothing secret reaches the disk.

When the directory next to the database cannot be written (a full disk, a read-only mount), the same files go
to the fallback directory `fallback_spool_dir` ($TMPDIR/canary-spool/<db name>-<hash>), which every reader
scans too. A journal that cannot be written anywhere does not stop the round (it probes and saves), but it is
remembered (`Journal.fault`) and makes the round a loud failure at its end; a deferred round that cannot be
kept anywhere raises SpoolError.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tasks.core.plan import model_slug, round_stamp
from tasks.core.types import Attempt, Endpoint, Mode, RoundInfo
from tasks.errors import SpoolError
from tasks.runtime.liveness import ProcessId
from tasks.store.records import attempt_from_row, attempt_row

JOURNAL_SUFFIX = ".journal.json"
SPOOL_SUFFIX = ".round.json"
#: A round's probes as they end, beside its journal (tasks/spool/probes.py).
PROBES_SUFFIX = ".probes.jsonl"


def spool_dir(db_path: str | os.PathLike[str]) -> Path:
    path = Path(db_path).expanduser().resolve()
    return path.with_name(path.name + ".spool")


def fallback_spool_dir(db_path: str | os.PathLike[str]) -> Path:
    """Where a round's files go when `spool_dir` cannot be written: under the temp directory (TMPDIR), named
    after the database so that two databases never share it."""
    path = Path(db_path).expanduser().resolve()
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "canary-spool" / f"{path.name}-{digest}"


def spool_dirs(db_path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Every directory a round's files may be in: next to the database first, then the fallback."""
    return spool_dir(db_path), fallback_spool_dir(db_path)


@dataclass(frozen=True)
class Kept:
    """Where `write_kept` put a file, and why the directory next to the database did not take it (if not)."""

    path: Path
    trouble: str | None = None


def write_kept(db_path: str | os.PathLike[str], name: str, payload: dict[str, Any]) -> Kept:
    """Write `name` atomically into the first spool directory that takes it; SpoolError when none does."""
    errors: list[str] = []
    for directory in spool_dirs(db_path):
        try:
            _write_atomic(directory / name, payload)
            return Kept(directory / name, "; ".join(errors) or None)
        except OSError as exc:
            errors.append(f"cannot write {directory}: {exc.strerror or type(exc).__name__}")
    raise SpoolError(f"spool: {name} not kept ({'; '.join(errors)})")


def _stem(info: RoundInfo) -> str:
    """`<model slug>@<round time>`, to the millisecond like the round id (two rounds in one second: two files)."""
    return f"{model_slug(info.model)}@{round_stamp(info.round_ts, '%Y%m%dT%H%M%S')}"


def _write_atomic(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, default=_encode)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _encode(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot spool {type(value).__name__}")


def _info_json(info: RoundInfo) -> dict[str, str | bool | None]:
    return {"round_id": info.round_id, "model": info.model, "round_ts": info.round_ts.isoformat(),
            "mode": str(info.mode), "partial": info.partial, "run_id": info.run_id}


def endpoint_json(e: Endpoint) -> dict[str, Any]:
    return {**asdict(e), "supported_parameters": list(e.supported_parameters)}


def endpoint_from_json(obj: dict[str, Any]) -> Endpoint:
    return Endpoint(**{**obj, "supported_parameters": tuple(obj.get("supported_parameters") or ())})


def _info(obj: dict[str, Any]) -> RoundInfo:
    return RoundInfo(obj["round_id"], obj["model"], datetime.fromisoformat(obj["round_ts"]), Mode(obj["mode"]),
                     bool(obj.get("partial", False)), obj.get("run_id"))


# -- journals ------------------------------------------------------------------------------------------------
@dataclass
class Journal:
    """The running round's trail on disk: which step it is in, and which process runs it. A step that cannot be
    written anywhere does not raise: `fault` keeps the first such failure (the round reports it at its end).
    A round that raised says so (`fail`): the next round marks it `failed` with that error, not `crashed`, when
    its own process could not record it in the store."""

    path: Path
    info: RoundInfo
    started_at: datetime
    flow_run_id: str | None = None  # the Prefect flow run holding the model's round slot
    lease_id: str | None = None  # the Prefect lease the slot is held under (freed by the next round if we die)
    step_name: str = "start"
    db_path: str = ""
    fault: SpoolError | None = None
    error: str | None = None  # why the round failed (`fail`)
    mode_override: str | None = None  # the run's own `--mode`, if any (its kept probes land in that mode)

    @classmethod
    def start(cls, db_path: str, info: RoundInfo, started_at: datetime, flow_run_id: str | None = None,
              mode_override: str | None = None, lease_id: str | None = None) -> Journal:
        journal = cls(spool_dir(db_path) / (_stem(info) + JOURNAL_SUFFIX), info, started_at, flow_run_id,
                      lease_id, db_path=db_path, mode_override=mode_override)
        journal.step("start")
        return journal

    def step(self, name: str) -> None:
        self.step_name = name
        payload = {**_info_json(self.info), **ProcessId.current().as_json(), "flow_run_id": self.flow_run_id,
                   "lease_id": self.lease_id, "step": name, "started_at": self.started_at.isoformat(),
                   "error": self.error, "mode_override": self.mode_override}
        try:
            kept = write_kept(self.db_path, self.path.name, payload)
        except SpoolError as exc:
            self.fault = self.fault or exc
            return
        if kept.trouble is not None:  # in the fallback directory: the disk beside the database is in trouble
            self.fault = self.fault or SpoolError(f"spool: {kept.trouble} (the journal went to {kept.path.parent})")
        if kept.path != self.path:  # do not leave a stale step behind
            with contextlib.suppress(OSError):
                self.path.unlink(missing_ok=True)
            self.path = kept.path

    def fail(self, error: str) -> None:
        """The round raised during its current step: keep why, beside the step."""
        self.error = error
        self.step(self.step_name)

    def finish(self) -> None:
        """The round ended: its journal, and the probes it kept (tasks/spool/probes.py), go."""
        probes = self.path.name.removesuffix(JOURNAL_SUFFIX) + PROBES_SUFFIX
        for directory in spool_dirs(self.db_path):
            for name in (self.path.name, probes):
                with contextlib.suppress(OSError):  # never written there (or not even a directory)
                    (directory / name).unlink(missing_ok=True)


@dataclass(frozen=True)
class DeadRound:
    info: RoundInfo
    step: str
    started_at: datetime
    journal: Path
    flow_run_id: str | None = None
    alive: bool = False  # its process is still running (or runs on another host: it cannot be told)
    error: str | None = None  # the round raised and said why (`Journal.fail`): failed, not crashed
    mode_override: str | None = None  # the run's own `--mode`
    lease_id: str | None = None  # the Prefect lease its round slot was held under


def round_journals(db_path: str, model: str, *, besides: str, own_process: bool = True) -> list[DeadRound]:
    """Journals of `model`'s rounds other than `besides`, each saying whether its process is still running
    (oldest first). A journal of this very process counts as dead (a round that raised left it) unless
    `own_process` is False; a process on another host counts as alive (it cannot be checked from here)."""
    out: list[DeadRound] = []
    for directory in spool_dirs(db_path):
        if not directory.is_dir():
            continue
        # the model's own files only (`_stem`): a cycle's other rounds in flight each keep a journal here too
        for path in directory.glob(glob.escape(model_slug(model)) + "@*" + JOURNAL_SUFFIX):
            try:
                obj = json.loads(path.read_text(encoding="utf-8"))
                info = _info(obj)
                started_at = datetime.fromisoformat(obj["started_at"])
            except (OSError, ValueError, KeyError):
                continue
            if info.model != model or info.round_id == besides:
                continue
            owner = ProcessId.from_json(obj)
            if obj.get("error"):  # the round raised and said so: over, whatever its process does now
                alive = False
            else:
                alive = (not own_process) if owner.is_me() else not owner.is_gone()
            out.append(DeadRound(info, str(obj.get("step", "unknown")), started_at, path, obj.get("flow_run_id"),
                                 alive, obj.get("error"), obj.get("mode_override"), obj.get("lease_id")))
    return sorted(out, key=lambda d: d.info.round_ts)


def dead_journals(db_path: str, model: str, *, besides: str, own_process: bool = True) -> list[DeadRound]:
    """The journals of `round_journals` whose process is certainly gone."""
    return [d for d in round_journals(db_path, model, besides=besides, own_process=own_process) if not d.alive]


# -- deferred rounds -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpooledRound:
    """A probed round waiting for the write window: everything needed to settle and land it later."""

    info: RoundInfo
    mode_override: str | None
    endpoints: tuple[Endpoint, ...]
    attempts: tuple[Attempt, ...]
    spooled_at: datetime
    path: Path | None = None


def spool_round(db_path: str, r: SpooledRound) -> Kept:
    """Keep a settled-but-unwritten round on disk (atomic; the fallback directory when the one next to the
    database cannot be written); returns where it went, or raises SpoolError when no directory takes it."""
    return write_kept(db_path, _stem(r.info) + SPOOL_SUFFIX, {
        **_info_json(r.info),
        "mode_override": r.mode_override,
        "spooled_at": r.spooled_at.isoformat(),
        "endpoints": [endpoint_json(e) for e in r.endpoints],
        "attempts": [attempt_row(a) for a in r.attempts],
    })


def spooled_rounds(db_path: str) -> list[SpooledRound]:
    """Every deferred round on disk (both spool directories), oldest round first (a file that cannot be read
    is left for a human)."""
    out = []
    for directory in spool_dirs(db_path):
        if not directory.is_dir():
            continue
        for path in directory.glob("*" + SPOOL_SUFFIX):
            try:
                out.append(_load(path))
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return sorted(out, key=lambda r: (r.info.round_ts, r.info.model))


def _load(path: Path) -> SpooledRound:
    obj = json.loads(path.read_text(encoding="utf-8"))
    endpoints = tuple(endpoint_from_json(e) for e in obj["endpoints"])
    attempts = tuple(
        attempt_from_row({**row, "started_at": datetime.fromisoformat(row["started_at"])})
        for row in obj["attempts"]
    )
    return SpooledRound(_info(obj), obj.get("mode_override"), endpoints, attempts,
                        datetime.fromisoformat(obj["spooled_at"]), path)
