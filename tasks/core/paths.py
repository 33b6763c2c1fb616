"""The one rule for a path that a file names (canary.toml's `db_path`, `publish_dir`, `exclusions_file`; the
routes file's `publish_dir`, `events_path`, `events_db`, `savings_path`, each tier's `ignore_file`).

`~` is expanded; an absolute path stays as it is; a relative one is read against the naming file's own directory
(`base_dir`), never the directory the command was started from, so a service, a Prefect worker and an
operator's shell anywhere read the same files. `base_dir=None` (a mapping that came from no file) leaves a
relative path relative.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["file_dir", "resolve_against"]


def resolve_against(path: str, base_dir: Path | None) -> str:
    """`path` with `~` expanded, made absolute against `base_dir` when it is relative (and `base_dir` given)."""
    expanded = Path(path).expanduser()
    return str(expanded if base_dir is None or expanded.is_absolute() else base_dir / expanded)


def file_dir(path: str | Path) -> Path:
    """The directory relative paths named in the file at `path` are read against (symlinks followed)."""
    return Path(path).expanduser().resolve().parent
