"""Publishing the ignore list: a JSON file per model, a keyed Prefect artifact, and the CLI's view.

Published after every round and after every admin change. The JSON file is written atomically (temp file +
rename), so the router and the application never read half a list.

The publish directory belongs to its database. Left at its default (`publish_dir = "published"`), it is
derived from the database: `published/` next to `canary.duckdb`, `<stem>-published/` next to any other
file (`demo.duckdb` -> `demo-published/`), so admin commands on the demo or a scratch database never touch
production's lists. Any other `publish_dir` value is used as configured. In both cases the first database
to publish into a directory to publish there records its resolved path in
`<publish_dir>/.canary-db`, and any other database is refused (`StoreError`, one line) while that database
still exists. So a command run against a mistyped or scratch database can never overwrite the ignore lists
production traffic reads; such a database needs its own `publish_dir`.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from tasks import store
from tasks.config import DEFAULT_DB_PATH, DEFAULT_PUBLISH_DIR, CanaryConfig
from tasks.core.exclusions import load_builtin, merge_ignore_list
from tasks.core.plan import model_slug
from tasks.core.render.markdown import render_ignore_markdown
from tasks.core.types import IgnoreList, Mode
from tasks.errors import StoreError
from tasks.store.history import known_tags

#: The file in a publish directory that names the database owning it.
OWNER_FILE = ".canary-db"


def publish_dir(cfg: CanaryConfig) -> Path:
    """Where `cfg`'s ignore lists go: `publish_dir` as configured, or derived from the database (above)."""
    if cfg.publish_dir != DEFAULT_PUBLISH_DIR:
        return Path(cfg.publish_dir).expanduser()
    db = Path(cfg.db_path).expanduser()
    own = DEFAULT_PUBLISH_DIR if db.stem == Path(DEFAULT_DB_PATH).stem else f"{db.stem}-published"
    return db.parent / own


def claim_publish_dir(cfg: CanaryConfig) -> Path:
    """The publish directory of `cfg`, claimed for `cfg.db_path`; StoreError if another database owns it."""
    directory = publish_dir(cfg)
    db = str(Path(cfg.db_path).expanduser().resolve())
    marker = directory / OWNER_FILE
    try:
        owner = marker.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        owner = ""
    if owner == db:
        return directory
    if owner and Path(owner).exists():
        raise StoreError(
            f"publish: {directory.resolve()} holds the ignore lists of {owner}, not of {db};"
            " give this database its own publish_dir (config key) or use --db to name the right one"
        )
    directory.mkdir(parents=True, exist_ok=True)
    write_atomically(marker, db + "\n")
    return directory


def write_atomically(path: Path, text: str) -> None:
    """Write `path` through a temp file and a rename (readers never see half a file), with the permissions
    a plain `open(path, "w")` would give (0666 less the umask: 0644 by default), so an application running
    as another user can read the list (`mkstemp` would make it 0600)."""
    for _ in range(100):
        tmp = path.parent / f".{path.stem}-{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return
    raise FileExistsError(f"no free temp file name next to {path}")


def ignore_file(cfg: CanaryConfig, model: str) -> Path:
    return publish_dir(cfg) / f"{model_slug(model)}.json"


def artifact_key(model: str) -> str:
    return f"provider-ignore-{model_slug(model)}"


def round_artifact_keys(model: str, *, partial: bool = False) -> tuple[str, str]:
    """A round's Markdown and table artifact keys: `round-<slug>` and `endpoints-<slug>` for a full round; a
    confirmation round's own `confirm-<slug>` and `confirm-endpoints-<slug>`, so the model's latest `round-` and
    `endpoints-` artifacts stay the last full round's, every endpoint in them (docs/operations.md "What runs")."""
    slug = model_slug(model)
    return (f"confirm-{slug}", f"confirm-endpoints-{slug}") if partial else (f"round-{slug}", f"endpoints-{slug}")


def current_ignore_list(
    con: store.Connection, cfg: CanaryConfig, model: str, endpoint_tags: Sequence[str] | None, now: datetime
) -> IgnoreList:
    """The merged ignore list of `model` at `now`: builtin file + operational table + enforce suspensions."""
    tags = list(endpoint_tags) if endpoint_tags is not None else known_tags(con, model)
    builtin = load_builtin(cfg.exclusions_file)
    operational = store.active_exclusions(con, now)
    states = store.load_states(con, model, Mode.ENFORCE)
    evidence = store.suspension_evidence(con, model, [t for t, st in states.items() if st.is_suspended])
    return merge_ignore_list(model, tags, builtin, operational, states, now, evidence)


def write_ignore_file(cfg: CanaryConfig, ignore: IgnoreList) -> Path:
    claim_publish_dir(cfg)
    path = ignore_file(cfg, ignore.model)
    write_atomically(path, json.dumps(ignore.as_json(), indent=2) + "\n")
    return path


def create_ignore_artifact(ignore: IgnoreList) -> Any:
    """The keyed artifact (call inside a flow or task run)."""
    from prefect.artifacts import create_markdown_artifact

    return create_markdown_artifact(
        key=artifact_key(ignore.model),
        markdown=render_ignore_markdown(ignore),
        description=f"provider.ignore for {ignore.model}",
    )


def publish_ignore_list(cfg: CanaryConfig, ignore: IgnoreList, *, artifact: bool = True) -> Path:
    path = write_ignore_file(cfg, ignore)
    if artifact:
        create_ignore_artifact(ignore)
    return path
