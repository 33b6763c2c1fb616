"""The operational layer is also editable from the Prefect UI, through the Prefect Variable
`canary-operational-exclusions` (a JSON list of `{tag, model, reason, who, until}`).

DuckDB is the source of truth (it keeps the history). `sync` runs at the start of every round's decision step
and after every CLI change, whenever a Prefect API is reachable:

1. if the Variable differs from what was last written to it, an admin edited it in the UI: entries that
   appeared are added (who = their `who` or "prefect-ui"), entries that disappeared are removed;
2. then the Variable is rewritten from the table, and that value is remembered in `settings`.

So after every sync the CLI, the table and the Variable agree; an edit in the UI takes effect at the next
sync (the next round, or the next `canary exclude ...`), and is never lost or overwritten unseen.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tasks import store
from tasks.core.types import OperationalExclusion

VARIABLE_NAME = "canary-operational-exclusions"
_SYNCED_KEY = "operational_variable_synced"
log = logging.getLogger("canary")


def to_json(exclusions: Sequence[OperationalExclusion]) -> list[dict[str, Any]]:
    return [
        {
            "tag": e.tag,
            "model": e.model,
            "reason": e.reason,
            "who": e.who,
            "until": e.until.isoformat() if e.until else None,
        }
        for e in sorted(exclusions, key=lambda e: (e.tag, e.model or ""))
    ]


def _key(entry: dict[str, Any]) -> tuple[str, str]:
    return (str(entry.get("tag", "")).strip().lower(), str(entry.get("model") or ""))


def parse_variable(value: Any) -> list[dict[str, Any]] | None:
    """The Variable's entries, or None when it holds something that is not a list of {tag, ...}."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, list):
        return None
    out = [e for e in value if isinstance(e, dict) and isinstance(e.get("tag"), str) and e["tag"].strip()]
    return out if len(out) == len(value) else None


def apply_ui_edits(
    con: store.Connection, variable: list[dict[str, Any]], synced: list[dict[str, Any]], now: datetime
) -> int:
    """Add/remove what changed in the Variable since the last sync. Returns the number of changes."""
    before = {_key(e): e for e in synced}
    after = {_key(e): e for e in variable}
    changes = 0
    for key in sorted(after.keys() - before.keys()):
        e = after[key]
        until = e.get("until")
        store.add_exclusion(
            con,
            OperationalExclusion(
                tag=key[0],
                model=key[1] or None,
                reason=str(e.get("reason") or "added in the Prefect UI"),
                who=str(e.get("who") or "prefect-ui"),
                added_at=now,
                until=datetime.fromisoformat(until) if isinstance(until, str) and until else None,
            ),
        )
        changes += 1
    for key in sorted(before.keys() - after.keys()):
        changes += store.remove_exclusion(
            con, key[0], key[1] or None, "prefect-ui", "removed in the Prefect UI", now
        )
    return changes


UNREACHABLE = object()


def fetch_variable() -> Any:
    """The Variable's current value (None if unset), or `UNREACHABLE` without a Prefect API.

    Called outside any DuckDB write window: a slow Prefect API must never hold the store's lock.
    """
    try:
        from prefect.variables import Variable

        return Variable.get(VARIABLE_NAME, default=None)
    except Exception as exc:
        log.debug("operational exclusions: Prefect Variable not reachable (%s)", type(exc).__name__)
        return UNREACHABLE


def reconcile(con: store.Connection, now: datetime, current: Any) -> list[dict[str, Any]] | None:
    """Apply edits made in the UI since the last sync; return the value the Variable must now hold
    (None when Prefect was unreachable: nothing to write)."""
    if current is UNREACHABLE:
        return None
    synced_raw = store.get_setting(con, _SYNCED_KEY, None)
    synced = parse_variable(synced_raw) if synced_raw else []
    if current is not None:
        entries = parse_variable(current)
        if entries is None:
            log.warning("Variable %s is not a JSON list of {tag, model, ...}; edit ignored", VARIABLE_NAME)
        elif synced is not None and _canon(entries) != _canon(synced):
            apply_ui_edits(con, entries, synced, now)
    value = to_json(store.active_exclusions(con, now))
    if (
        current is not None
        and synced is not None
        and value == synced
        and _canon(value) == _canon(parse_variable(current) or [])
    ):
        return None  # both sides already agree: no API write this round
    return value


def write_variable(value: list[dict[str, Any]]) -> bool:
    try:
        from prefect.variables import Variable

        Variable.set(VARIABLE_NAME, value, overwrite=True)  # type: ignore[arg-type]
        return True
    except Exception as exc:
        log.warning(
            "operational exclusions: could not write Variable %s (%s)", VARIABLE_NAME, type(exc).__name__
        )
        return False


def mark_synced(con: store.Connection, value: list[dict[str, Any]]) -> None:
    """Remember what the Variable holds, only once it was written (else a failed write looks like an edit)."""
    store.set_setting(con, _SYNCED_KEY, json.dumps(value))


def sync(db_path: str, now: datetime) -> bool:
    """Reconcile the table and the Variable in two short write windows. False when Prefect is unreachable."""
    current = fetch_variable()
    if current is UNREACHABLE:
        return False
    with store.open_store(db_path) as con:
        value = reconcile(con, now, current)
    if value is None:
        return True  # the table and the Variable already agree
    if not write_variable(value):
        return False
    with store.open_store(db_path) as con:
        mark_synced(con, value)
    return True


def _canon(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted(_key(e) for e in entries)
