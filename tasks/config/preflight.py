"""`preflight(cfg)`: what a round needs from the file system, checked before anything starts.

The CLI calls it (through tasks.config) before `canary run`, `serve` and `demo`; a problem is one ConfigError
naming the key (`config: publish_dir '...' is not a writable directory (...)`), printed as one line, exit 2.
Nothing is created: a directory that does not exist yet is fine when its nearest existing ancestor accepts
a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.errors import ConfigError

if TYPE_CHECKING:
    from tasks.config import CanaryConfig


def preflight(cfg: CanaryConfig) -> None:
    """Check what the round will need from the file system, without creating anything: the database's
    directory and `publish_dir` can be written (or created), the exclusions file exists, reads and
    parses. Raises ConfigError naming the key."""
    db = Path(cfg.db_path)
    if db.is_dir():
        raise ConfigError(f"config: db_path {cfg.db_path!r} is a directory, not a database file")
    if db.exists() and not os.access(db, os.R_OK | os.W_OK):
        raise ConfigError(f"config: db_path {cfg.db_path!r} is not writable")
    _check_writable_dir(db.parent, "db_path", cfg.db_path, "is not in a writable directory")
    _check_writable_dir(Path(cfg.publish_dir), "publish_dir", cfg.publish_dir, "is not a writable directory")
    from tasks.core.exclusions import load_builtin

    if not Path(cfg.exclusions_file).is_file():  # named by --set or in code (load_config checks the file's own)
        raise ConfigError(f"config: exclusions_file: {cfg.exclusions_file} does not exist")
    try:
        load_builtin(cfg.exclusions_file)
    except ConfigError as exc:
        raise ConfigError(f"config: exclusions_file {cfg.exclusions_file!r}: {exc}") from None


def _check_writable_dir(path: Path, key: str, shown: str, problem: str) -> None:
    """`path` is (or can be created as) a directory we can write in: its nearest existing ancestor must be a
    directory that accepts a file (tried with a temporary file, which also catches read-only file systems)."""
    existing = path if str(path) else Path(".")
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"config: {key} {shown!r} {problem} ({existing} is a file)")
    try:
        with tempfile.TemporaryFile(dir=existing, prefix=".canary-preflight-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        detail = f"cannot create a file in {existing}: {reason}"
        raise ConfigError(f"config: {key} {shown!r} {problem} ({detail})") from None
