"""Who claimed an alert for a post, and whether that process still lives.

A claim is stamped with ``host|pid|start``: the same host and pid a round's journal carries
(tasks/spool.py), plus the process's start time (Linux: clock ticks since boot, from /proc/<pid>/stat), so
a pid reused by a newer process is not mistaken for the claimer. `claimer_alive` is pure: the caller passes
the host it runs on and a function that reads a pid's start time.

    claimer_alive("box|4242|98765", host="box", start_of=process_start)  ->  False once 4242 is gone
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable


def claimer_id(host: str, pid: int, start: str | None) -> str:
    return f"{host}|{pid}|{start or '?'}"


def claimer_alive(claimer: str | None, *, host: str, start_of: Callable[[int], str | None]) -> bool:
    """False only when the claim was made on `host` by a process that is gone (no such pid, or the pid now
    belongs to a process started at another time). A claim from another host, or one that cannot be read,
    counts as alive: its lease decides."""
    if not claimer:
        return True
    parts = claimer.split("|")
    if len(parts) != 3 or parts[0] != host:
        return True
    try:
        pid = int(parts[1])
    except ValueError:
        return True
    now_start = start_of(pid)
    if now_start is None:
        return False
    return parts[2] in ("?", now_start)


def process_start(pid: int) -> str | None:
    """The start time of process `pid` ('?' where it cannot be read), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return None
    except OSError:
        stat = ""
    if stat:
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 19:
            return fields[19]  # field 22 of proc(5): starttime
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "?"


def this_claimer() -> str:
    """This process, as a claim records it."""
    pid = os.getpid()
    return claimer_id(socket.gethostname(), pid, process_start(pid))


def is_dead(claimer: str | None) -> bool:
    """The claimer ran on this host and is gone."""
    return not claimer_alive(claimer, host=socket.gethostname(), start_of=process_start)
