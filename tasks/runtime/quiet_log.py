"""One log line per condition, not one per look: for loops that look again every few seconds.

    quiet = QuietLog(log)
    quiet.say("database", "waiting for the first database at canary.duckdb")   # logged
    quiet.say("database", "waiting for the first database at canary.duckdb")   # the same: not logged again
    quiet.end("database", "the database is there")                             # logged once, as it ends

A condition is logged when it begins and whenever its line changes (a different error), and once when it
ends, so a lasting one is neither repeated every few seconds nor silent.
"""

from __future__ import annotations

import logging
import threading


class QuietLog:
    def __init__(self, logger: logging.Logger) -> None:
        self._log = logger
        self._said: dict[str, str] = {}
        self._lock = threading.Lock()

    def say(self, key: str, line: str, level: int = logging.WARNING) -> bool:
        """Log `line` unless it is what `key` said last; True when it was logged."""
        with self._lock:
            if self._said.get(key) == line:
                return False
            self._said[key] = line
        self._log.log(level, "%s", line)
        return True

    def end(self, key: str, line: str | None = None, level: int = logging.INFO) -> bool:
        """The condition `key` is over: log `line` (when given) if it had said something; True when it had."""
        with self._lock:
            had = self._said.pop(key, None) is not None
        if had and line:
            self._log.log(level, "%s", line)
        return had
