"""Is the process that wrote a journal or holds a lock still running? (shell: reads /proc, no DuckDB, no Prefect)

    me = ProcessId.current()            # written into a journal or a lock file as me.as_json()
    ProcessId.from_json(obj).is_gone()  # later, from another process: True only when it is certain

A pid alone can be reused after its process died, so a journal records the pid, the host and the process's
start time (Linux: /proc/<pid>/stat, clock ticks since boot). A process is gone when its pid is free, or taken
by a process that started at another time. A process on another host cannot be checked from here: it is never
called gone (its round is left alone; its host's next run decides).

The same identity, written as the string ``host|pid|start``, stamps an alert claimed for a post
(`ProcessId.as_claim`, the outbox's ``alerts.claimed_by``), so a claim whose process is gone is taken over at once.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_start(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (field 22 of /proc/<pid>/stat); None where that cannot be
    read (no such process, no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def judged_gone(
    proc: ProcessId, *, host: str, alive: Callable[[int], bool], start_of: Callable[[int], int | None]
) -> bool:
    """Pure: `proc` is certainly not running, as seen from `host` (its pid free, or reused by a process that
    started at another time). Another host's process, or a start time that cannot be read, is never gone."""
    if proc.host != host:
        return False
    if not alive(proc.pid):
        return True
    now = start_of(proc.pid)
    return proc.start is not None and now is not None and now != proc.start


@dataclass(frozen=True)
class ProcessId:
    """A process, named so that a reused pid is not mistaken for it."""

    pid: int
    host: str
    start: int | None = None  # process_start(pid) when it was recorded

    @classmethod
    def current(cls) -> ProcessId:
        return cls(os.getpid(), socket.gethostname(), process_start(os.getpid()))

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ProcessId:
        start = obj.get("pid_start")
        return cls(int(obj.get("pid") or 0), str(obj.get("host") or socket.gethostname()),
                   int(start) if start is not None else None)

    def as_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "host": self.host, "pid_start": self.start}

    def as_claim(self) -> str:
        """The one-line form an alert claim stores: ``host|pid|start`` (``?`` when the start is unknown)."""
        return f"{self.host}|{self.pid}|{'?' if self.start is None else self.start}"

    @classmethod
    def from_claim(cls, claim: str | None) -> ProcessId | None:
        """The process `as_claim` wrote, or None for an empty or malformed claim (its lease decides)."""
        parts = (claim or "").split("|")
        if len(parts) != 3:
            return None
        try:
            return cls(int(parts[1]), parts[0], None if parts[2] == "?" else int(parts[2]))
        except ValueError:
            return None

    def is_local(self) -> bool:
        return self.host == socket.gethostname()

    def is_me(self) -> bool:
        return self.is_local() and self.pid == os.getpid()

    def is_gone(self) -> bool:
        """Certainly not running: on this host, and its pid free or reused by a younger process."""
        return judged_gone(self, host=socket.gethostname(), alive=pid_alive, start_of=process_start)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def claim_is_dead(claim: str | None) -> bool:
    """An alert claim made on this host by a process that is gone (the outbox takes such a claim over)."""
    proc = ProcessId.from_claim(claim)
    return proc is not None and proc.is_gone()
