"""Files next to the database that keep a round's work when the database cannot take it (shell, no DuckDB).

    <db>.spool/<round>.journal.json   written when a round starts, updated at each step, removed at its end:
                                      a journal whose process is gone tells the next round where it died
    <db>.spool/<round>.round.json     a probed round whose write window could not be had (status deferred):
                                      the next process that gets the lock settles and lands it, then deletes it

Every write is atomic (temp file, fsync, rename), so a crash leaves the old file or the new one, never half.
Attempts are stored as their table rows (redacted, as they would land), so nothing secret reaches the disk.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tasks.core.plan import model_slug
from tasks.core.types import Attempt, Endpoint, Mode, RoundInfo
from tasks.store.records import attempt_from_row, attempt_row

JOURNAL_SUFFIX = ".journal.json"
SPOOL_SUFFIX = ".round.json"


def spool_dir(db_path: str | os.PathLike[str]) -> Path:
    path = Path(db_path).expanduser().resolve()
    return path.with_name(path.name + ".spool")


def _stem(info: RoundInfo) -> str:
    return f"{model_slug(info.model)}@{info.round_ts.strftime('%Y%m%dT%H%M%S')}"


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


def _info_json(info: RoundInfo) -> dict[str, str | bool]:
    return {"round_id": info.round_id, "model": info.model, "round_ts": info.round_ts.isoformat(),
            "mode": str(info.mode), "partial": info.partial}


def _info(obj: dict[str, Any]) -> RoundInfo:
    return RoundInfo(obj["round_id"], obj["model"], datetime.fromisoformat(obj["round_ts"]), Mode(obj["mode"]),
                     bool(obj.get("partial", False)))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- journals ------------------------------------------------------------------------------------------------
@dataclass
class Journal:
    """The running round's trail on disk: which step it is in, and which process runs it."""

    path: Path
    info: RoundInfo
    started_at: datetime
    flow_run_id: str | None = None  # the Prefect flow run holding the model's round slot
    step_name: str = "start"

    @classmethod
    def start(cls, db_path: str, info: RoundInfo, started_at: datetime, flow_run_id: str | None = None) -> Journal:
        journal = cls(spool_dir(db_path) / (_stem(info) + JOURNAL_SUFFIX), info, started_at, flow_run_id)
        journal.step("start")
        return journal

    def step(self, name: str) -> None:
        self.step_name = name
        _write_atomic(self.path, {**_info_json(self.info), "pid": os.getpid(), "host": socket.gethostname(),
                                  "flow_run_id": self.flow_run_id, "step": name,
                                  "started_at": self.started_at.isoformat()})

    def finish(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class DeadRound:
    info: RoundInfo
    step: str
    started_at: datetime
    journal: Path
    flow_run_id: str | None = None


def dead_journals(db_path: str, model: str, *, besides: str, own_process: bool = True) -> list[DeadRound]:
    """Journals of `model`'s rounds other than `besides` whose process is gone (oldest first). A journal of
    this very process counts as dead (a round that raised left it) unless `own_process` is False."""
    out: list[DeadRound] = []
    directory = spool_dir(db_path)
    if not directory.is_dir():
        return out
    for path in directory.glob("*" + JOURNAL_SUFFIX):
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
            info = _info(obj)
        except (OSError, ValueError, KeyError):
            continue
        if info.model != model or info.round_id == besides:
            continue
        if obj.get("host", socket.gethostname()) != socket.gethostname():
            continue  # another machine's round: its liveness cannot be read from here
        pid = int(obj.get("pid", 0))
        if pid == os.getpid() and not own_process:
            continue
        if pid != os.getpid() and pid_alive(pid):
            continue
        out.append(DeadRound(info, str(obj.get("step", "unknown")), datetime.fromisoformat(obj["started_at"]),
                             path, obj.get("flow_run_id")))
    return sorted(out, key=lambda d: d.info.round_ts)


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


def spool_round(db_path: str, r: SpooledRound) -> Path:
    """Keep a settled-but-unwritten round on disk (atomic); returns the file."""
    path = spool_dir(db_path) / (_stem(r.info) + SPOOL_SUFFIX)
    _write_atomic(path, {
        **_info_json(r.info),
        "mode_override": r.mode_override,
        "spooled_at": r.spooled_at.isoformat(),
        "endpoints": [{**asdict(e), "supported_parameters": list(e.supported_parameters)} for e in r.endpoints],
        "attempts": [attempt_row(a) for a in r.attempts],
    })
    return path


def spooled_rounds(db_path: str) -> list[SpooledRound]:
    """Every deferred round on disk, oldest round first (a file that cannot be read is left for a human)."""
    directory = spool_dir(db_path)
    if not directory.is_dir():
        return []
    out = []
    for path in directory.glob("*" + SPOOL_SUFFIX):
        try:
            out.append(_load(path))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(out, key=lambda r: (r.info.round_ts, r.info.model))


def _load(path: Path) -> SpooledRound:
    obj = json.loads(path.read_text(encoding="utf-8"))
    endpoints = tuple(
        Endpoint(**{**e, "supported_parameters": tuple(e.get("supported_parameters") or ())})
        for e in obj["endpoints"]
    )
    attempts = tuple(
        attempt_from_row({**row, "started_at": datetime.fromisoformat(row["started_at"])})
        for row in obj["attempts"]
    )
    return SpooledRound(_info(obj), obj.get("mode_override"), endpoints, attempts,
                        datetime.fromisoformat(obj["spooled_at"]), path)
