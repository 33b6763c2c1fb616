"""Admin commands: status, ignore-list, exclude add/remove/list, lift, mode, export-history.

Every change is effective at once: it is written to DuckDB in one short window, the ignore list of each
affected model is republished (JSON file; the Prefect artifact too when a Prefect API is configured), and the
operational Variable is re-synced.
"""

from __future__ import annotations

import getpass
import json
import os
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import typer

from cli.runs import resolve_cli_config
from tasks import store
from tasks.clock import utcnow
from tasks.config import CanaryConfig, parse_duration
from tasks.errors import ConfigError
from tasks.exclusions import is_valid_tag
from tasks.publish import current_ignore_list, known_tags, write_ignore_file
from tasks.types import Decision, IgnoreList, Mode, OperationalExclusion


def _who(who: str | None) -> str:
    if who:
        return who
    try:
        return os.environ.get("USER") or getpass.getuser()
    except Exception:
        return "admin"


def _model(cfg: CanaryConfig, model: str | None) -> str:
    if model is None:
        return cfg.models[0]
    if model not in cfg.models:
        raise ConfigError(f"config: unknown model {model!r} (configured: {', '.join(cfg.models)})")
    return model


def _tag(tag: str) -> str:
    tag = tag.strip().lower()
    if not is_valid_tag(tag):
        raise ConfigError(f"exclude: {tag!r} is not an endpoint tag or provider slug (e.g. deepinfra/fp8)")
    return tag


def parse_until(value: str | None, now: datetime) -> datetime | None:
    """An ISO time (UTC if naive) or a duration from now ('12h', '3d')."""
    if not value:
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return ts if ts.tzinfo else ts.replace(tzinfo=now.tzinfo)
    except ValueError:
        return now + parse_duration(value, "--until")


def republish(
    con: store.Connection, cfg: CanaryConfig, now: datetime, models: list[str] | None = None
) -> list[IgnoreList]:
    """Write the ignore list JSON of every affected model right away (inside the write window)."""
    lists = [current_ignore_list(con, cfg, m, None, now) for m in models or list(cfg.models)]
    for ignore in lists:
        write_ignore_file(cfg, ignore)
    return lists


def after_change(cfg: CanaryConfig, lists: list[IgnoreList], now: datetime) -> None:
    """With a Prefect API configured: sync the operational Variable and refresh the keyed artifacts."""
    if not os.environ.get("PREFECT_API_URL"):
        return
    from flows.publish import publish_ignore_artifacts
    from tasks import variable_sync

    variable_sync.sync(cfg.db_path, now)
    try:
        publish_ignore_artifacts([il.as_json() for il in lists])
    except Exception as exc:  # the JSON file is already published; the artifact catches up next round
        typer.echo(f"canary: warning: artifact not refreshed ({type(exc).__name__})", err=True)


def _print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, default=str))


def ignore_list_command(*, config: Path | None, model: str | None, json_out: bool, db: str | None) -> None:
    cfg = resolve_cli_config(config, db=db)
    m = _model(cfg, model)
    now = utcnow()
    with store.open_store(cfg.db_path) as con:
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
    now = utcnow()
    with store.open_store(cfg.db_path) as con:
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


def exclude_add_command(
    *,
    tag: str,
    reason: str,
    model: str | None,
    until: str | None,
    who: str | None,
    config: Path | None,
    db: str | None,
) -> None:
    cfg = resolve_cli_config(config, db=db)
    m = _model(cfg, model) if model else None
    now = utcnow()
    until_ts = parse_until(until, now)
    if until_ts is not None and until_ts <= now:
        raise ConfigError(f"exclude: --until {until!r} is in the past")
    if not reason.strip():
        raise ConfigError("exclude: --reason must not be empty")
    excl = OperationalExclusion(
        tag=_tag(tag), reason=reason, who=_who(who), added_at=now, model=m, until=until_ts
    )
    with store.open_store(cfg.db_path) as con:
        store.add_exclusion(con, excl)
        lists = republish(con, cfg, now, [m] if m else None)
    after_change(cfg, lists, now)
    typer.echo(
        f"excluded {excl.tag}"
        + (f" for {m}" if m else " for every model")
        + (f" until {until_ts:%Y-%m-%d %H:%M UTC}" if until_ts else "")
    )


def exclude_remove_command(
    *, tag: str, model: str | None, reason: str, who: str | None, config: Path | None, db: str | None
) -> None:
    cfg = resolve_cli_config(config, db=db)
    m = _model(cfg, model) if model else None
    now = utcnow()
    with store.open_store(cfg.db_path) as con:
        closed = store.remove_exclusion(con, _tag(tag), m, _who(who), reason, now)
        lists = republish(con, cfg, now, [m] if m else None)
    after_change(cfg, lists, now)
    if not closed:
        raise ConfigError(
            f"exclude: no active operational exclusion of {tag!r}"
            + (f" for {m}" if m else " for every model (try --model)")
        )
    typer.echo(f"removed the operational exclusion of {tag}")


def exclude_list_command(*, config: Path | None, json_out: bool, history: bool, db: str | None) -> None:
    cfg = resolve_cli_config(config, db=db)
    now = utcnow()
    with store.open_store(cfg.db_path) as con:
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


def _apply_admin_decisions(
    con: store.Connection, cfg: CanaryConfig, model: str, decisions: list[Decision], now: datetime
) -> list[IgnoreList]:
    """Record admin decisions, republish, and queue their alerts (delivered after the window closes)."""
    from tasks.render import render_decision_alerts

    store.append_decisions(con, decisions)
    lists = republish(con, cfg, now, [model])
    store.enqueue_alerts(con, render_decision_alerts(decisions, {model: lists[0]}, None))
    return lists


def _deliver_after_close(cfg: CanaryConfig) -> None:
    """Post queued alerts with the database closed (never call Slack while holding the lock)."""
    from tasks.alerts import SlackSettings
    from tasks.delivery import deliver_outbox

    deliver_outbox(cfg.db_path, SlackSettings.from_env(), utcnow())


def lift_command(
    *, tag: str, reason: str, model: str | None, who: str | None, config: Path | None, db: str | None
) -> None:
    from tasks.policy import PolicyConfig, lift
    from tasks.store.state import load_policy_states, replace_policy_states

    cfg = resolve_cli_config(config, db=db)
    m = _model(cfg, model)
    now = utcnow()
    with store.open_store(cfg.db_path) as con:
        mode = Mode(store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value)
        states = load_policy_states(con, m, mode)
        new_states, decisions = lift(
            states,
            tag.strip().lower(),
            now,
            _who(who),
            reason,
            replace(PolicyConfig.from_config(cfg), mode=mode),
        )
        if not decisions:
            raise ConfigError(f"lift: {tag!r} is not suspended on {m} (see `canary status`)")
        replace_policy_states(con, m, mode, list(new_states.values()))
        lists = _apply_admin_decisions(con, cfg, m, decisions, now)
    _deliver_after_close(cfg)
    after_change(cfg, lists, now)
    typer.echo(f"lifted {tag} on {m}: back in routing now")


def mode_command(*, new_mode: str, config: Path | None, db: str | None) -> None:
    from tasks.policy import carry_over
    from tasks.store.state import load_policy_states, replace_policy_states

    try:
        target = Mode(new_mode)
    except ValueError:
        raise ConfigError(f"mode: must be 'observe' or 'enforce' (got {new_mode!r})") from None
    cfg = resolve_cli_config(config, db=db)
    now = utcnow()
    lists: list[IgnoreList] = []
    with store.open_store(cfg.db_path) as con:
        store.set_setting(con, store.MODE_KEY, target.value, at=now, who=_who(None))
        for m in cfg.models:
            states, decisions = carry_over(load_policy_states(con, m, target), target, now)
            replace_policy_states(con, m, target, list(states.values()))
            lists += _apply_admin_decisions(con, cfg, m, decisions, now)
    _deliver_after_close(cfg)
    after_change(cfg, lists, now)
    typer.echo(
        f"mode is now {target.value}"
        + (" (suspensions reach the ignore list)" if target is Mode.ENFORCE else " (would_* decisions only)")
    )


def export_history_command(*, out: Path, config: Path | None, model: str | None, db: str | None) -> None:
    from tasks.replay import build_replay_lines

    cfg = resolve_cli_config(config, db=db)
    with store.open_store(cfg.db_path) as con:
        frame = store.round_status_history(con, model=_model(cfg, model) if model else None)
    n = 0
    with open(out, "w", encoding="utf-8") as fh:
        for line in build_replay_lines(frame):
            fh.write(json.dumps(line, default=str) + "\n")
            n += 1
    typer.echo(f"wrote {n} lines to {out}")


__all__ = ["parse_until", "republish", "status_rows", "timedelta"]
