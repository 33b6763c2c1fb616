"""Read-only admin commands: status, ignore-list, exclude list, export-history.

Each works on an existing database only (a missing one is one line naming the path and how to get one,
exit 2) and opens it read-only: a read never creates a file, a directory or a snapshot.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import typer

from cli.admin import _model, _print_json
from cli.runs import require_database, resolve_cli_config
from tasks import store
from tasks.clock import utcnow
from tasks.config import CanaryConfig
from tasks.publish import current_ignore_list, known_tags
from tasks.types import IgnoreList, Mode


def ignore_list_command(*, config: Path | None, model: str | None, json_out: bool, db: str | None) -> None:
    cfg = resolve_cli_config(config, db=db)
    m = _model(cfg, model)
    require_database(cfg)
    now = utcnow()
    with store.open_store(cfg.db_path, read_only=True) as con:
        ignore = current_ignore_list(con, cfg, m, None, now)
    if json_out:
        _print_json(ignore.as_json())
        return
    typer.echo(f"{m}: provider.ignore = {json.dumps(list(ignore.ignore))}")
    for e in ignore.entries:
        until = f" until {e.until:%Y-%m-%d %H:%M UTC}" if e.until else ""
        typer.echo(f"  {e.tag:<24} {e.layer:<12} {e.reason}{until}")


def status_rows(con: store.Connection, cfg: CanaryConfig, model: str, now: datetime) -> list[dict[str, Any]]:
    ignore: IgnoreList = current_ignore_list(con, cfg, model, None, now)
    layers: dict[str, list[str]] = {}
    for e in ignore.entries:
        layers.setdefault(e.tag, []).append(str(e.layer))
    mode = Mode(store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value)
    states = {**store.load_states(con, model, Mode.OBSERVE), **store.load_states(con, model, Mode.ENFORCE)}
    tags = sorted(set(known_tags(con, model)) | set(states) | set(layers))
    rows = []
    for tag in tags:
        st = states.get(tag)
        rows.append(
            {
                "model": model,
                "tag": tag,
                "mode": str(st.mode) if st else str(mode),
                "state": ("suspended" if st and st.is_suspended else "ok") if st else "unknown",
                "fail_streak": st.fail_streak if st else 0,
                "clean_streak": st.clean_streak if st else 0,
                "suspended_until": st.suspended_until.isoformat() if st and st.suspended_until else None,
                "ladder_step": st.ladder_step if st else 0,
                "excluded_by": layers.get(tag, []),
            }
        )
    return rows


def status_command(*, config: Path | None, model: str | None, json_out: bool, db: str | None) -> None:
    cfg = resolve_cli_config(config, db=db)
    models = [_model(cfg, model)] if model else list(cfg.models)
    require_database(cfg)
    now = utcnow()
    with store.open_store(cfg.db_path, read_only=True) as con:
        mode = store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value
        rows = [r for m in models for r in status_rows(con, cfg, m, now)]
    if json_out:
        _print_json({"mode": mode, "endpoints": rows})
        return
    typer.echo(f"mode: {mode}")
    typer.echo(f"{'model':<36} {'tag':<22} {'state':<10} {'fail':>4} {'clean':>5}  {'until':<17} excluded by")
    for r in rows:
        until = r["suspended_until"][:16].replace("T", " ") if r["suspended_until"] else "-"
        typer.echo(
            f"{r['model']:<36} {r['tag']:<22} {r['state']:<10} {r['fail_streak']:>4} "
            f"{r['clean_streak']:>5}  {until:<17} {', '.join(r['excluded_by']) or '-'}"
        )


def exclude_list_command(*, config: Path | None, json_out: bool, history: bool, db: str | None) -> None:
    cfg = resolve_cli_config(config, db=db)
    require_database(cfg)
    now = utcnow()
    with store.open_store(cfg.db_path, read_only=True) as con:
        if history:
            frame = store.exclusion_history(con)
            rows = json.loads(frame.to_json(orient="records", date_format="iso"))
        else:
            rows = [
                {
                    "tag": e.tag,
                    "model": e.model,
                    "reason": e.reason,
                    "who": e.who,
                    "added_at": e.added_at.isoformat(),
                    "until": e.until.isoformat() if e.until else None,
                }
                for e in store.active_exclusions(con, now)
            ]
    if json_out:
        _print_json(rows)
        return
    if not rows:
        typer.echo("no operational exclusions" + (" in the history" if history else " in force"))
    for r in rows:
        typer.echo("  ".join(f"{k}={v}" for k, v in r.items() if v is not None))


def export_history_command(*, out: Path, config: Path | None, model: str | None, db: str | None) -> None:
    from tasks.replay import build_replay_lines

    cfg = resolve_cli_config(config, db=db)
    require_database(cfg)
    from tasks.store.settlement import partial_round_ids

    with store.open_store(cfg.db_path, read_only=True) as con:
        frame = store.round_status_history(con, model=_model(cfg, model) if model else None)
        partial = partial_round_ids(con)  # confirmation rounds: their lines say "partial": true
    frame = frame.assign(partial=frame["round_id"].isin(partial)) if not frame.empty else frame
    n = 0
    with open(out, "w", encoding="utf-8") as fh:
        for line in build_replay_lines(frame):
            fh.write(json.dumps(line, default=str) + "\n")
            n += 1
    typer.echo(f"wrote {n} lines to {out}")
