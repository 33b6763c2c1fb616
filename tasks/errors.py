"""Errors for the operator. A transport failure of a provider is *data* (Outcome.TRANSPORT), never these.

* CanaryError            base; str() is the one line the CLI prints
  + ConfigError          bad TOML/key/URL, unknown model, missing env
  + StoreError           DuckDB lock held too long (`busy`) / file that cannot be opened, read or written
                         (truncated, not a DuckDB file, a full disk) / migration failed
  + SpoolError           a round's journal or spool file could not be written anywhere (a full disk)
  + RoundIdTaken         a round id another run already holds (two rounds of one model at one instant)
  + FleetError           bad simulator fleet file
  + RoutesError          bad router routes file
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


class CanaryError(Exception):
    """Base class: its message is one line, fit to print to a user without a traceback."""


class ConfigError(CanaryError):
    """The configuration (file, key, environment) is unusable."""


class StoreError(CanaryError):
    """The DuckDB store could not be opened, read, migrated or written. `busy`: another process held it (wait
    and retry, or spool); otherwise the file or its disk is the problem (an admin must look)."""

    def __init__(self, message: str, *, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy


class SpoolError(CanaryError):
    """A file a round keeps beside the database (its journal, a deferred round) could not be written, neither
    next to the database nor in the fallback directory (tasks/spool/journal.py): a full disk, a read-only mount."""


class RoundIdTaken(CanaryError):
    """A round's id is already held by another run's round: the save refuses rather than replace that round
    (tasks/store/settlement.py `claim_round_id`). Not a StoreError: the round is not spooled to try again."""


class FleetError(CanaryError):
    """The simulator's fleet file is malformed."""


class RoutesError(CanaryError):
    """The router's routes file is malformed."""


def read_text_file(path: Path, fail: Callable[[str], CanaryError]) -> str:
    """A UTF-8 file's text; a missing or unreadable file is `fail(<one line naming it>)`, raised."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise fail(f"file {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"cannot read {path} ({type(exc).__name__})") from None
