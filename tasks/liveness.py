"""Is the process that wrote a journal or holds a lock still running? (shell: reads /proc, no DuckDB, no Prefect)

    me = ProcessId.current()            # written into a journal or a lock file as me.as_json()
    ProcessId.from_json(obj).is_gone()  # later, from another process: True only when it is certain

A pid alone can be reused after its process died, so a journal records the pid, the host and the process's
start time (Linux: /proc/<pid>/stat, clock ticks since boot). A process is gone when its pid is free, or taken
by a process that started at another time. A process on another host cannot be checked from here: it is never
called gone (its round is left alone; its host's next run decides).
"""

from __future__ import annotations

import os
import socket
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

    def is_local(self) -> bool:
        return self.host == socket.gethostname()

    def is_me(self) -> bool:
        return self.is_local() and self.pid == os.getpid()

    def is_gone(self) -> bool:
        """Certainly not running: on this host, and its pid free or reused by a younger process."""
        if not self.is_local():
            return False
        if not pid_alive(self.pid):
            return True
        now = process_start(self.pid)
        return self.start is not None and now is not None and now != self.start

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"
