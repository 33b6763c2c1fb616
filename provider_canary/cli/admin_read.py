"""Read-only admin commands: status, ignore-list, exclude list, export-history.

Each works on an existing database only (a missing one is one line naming the path and how to get one,
exit 2) and opens it read-only: a read never creates a file, a directory or a snapshot.
"""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import typer

from provider_canary.cli.admin import _model, _print_json, admin_config
from provider_canary.cli.runs import require_database
from tasks import store
from tasks.config import CanaryConfig
from tasks.core.cost import CostTotals
from tasks.core.render.status import policy_label, status_lines
from tasks.core.render.text import name
from tasks.core.types import IgnoreList, Mode, RoundState
from tasks.ignore_list.publish import current_ignore_list
from tasks.runtime.clock import utcnow
from tasks.store.history import known_tags


def ignore_list_command(*, config: Path | None, model: str | None, json_out: bool, db: str | None) -> None:
    cfg = admin_config(config, db)
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


def status_rows(con: store.Connection, cfg: CanaryConfig, model: str, now: datetime,
                ignore: IgnoreList | None = None) -> list[dict[str, Any]]:
    ignore = current_ignore_list(con, cfg, model, None, now) if ignore is None else ignore
    layers: dict[str, list[str]] = {}
    for e in ignore.entries:
        layers.setdefault(e.tag, []).append(str(e.layer))
    mode = Mode(store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value)
    states = {**store.load_states(con, model, Mode.OBSERVE), **store.load_states(con, model, Mode.ENFORCE)}
    tags = sorted(set(known_tags(con, model)) | set(states) | set(layers))
    from tasks.store.live import latest_signals

    signals = latest_signals(con, model)
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
                # OpenRouter's own figures from the latest round's listing: shown, never a verdict
                "openrouter": signals.get(tag),
                # what traffic sees: no layer excludes it (the published list), and whether the policy state
                # is the observe mode's shadow (its `suspended` keeps nothing out of traffic)
                "in_traffic": tag not in layers,
                "shadow": bool(st and st.mode is Mode.OBSERVE),
                "policy": policy_label(st, now),
            }
        )
    return rows


def excluded_now(ignore: IgnoreList) -> list[dict[str, Any]]:
    """The model's published ignore list as `canary status` leads with it: each tag, its layer, its end."""
    return [{"model": ignore.model, "tag": e.tag, "layer": str(e.layer),
             "until": e.until.isoformat() if e.until else None} for e in ignore.entries]


#: Days of spend `canary status` lists (today included).
SPEND_DAYS = 7


def _totals_json(t: CostTotals) -> dict[str, Any]:
    return {
        "usd": t.usd, "requests": t.requests, "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens, "tokens": t.tokens, "reported_usd": t.reported_usd,
        "estimated_usd": t.estimated_usd, "estimated_share": t.estimated_share,
        "estimated_requests": t.estimated_requests, "unpriced_requests": t.unpriced_requests,
    }


def _sum(items: list[CostTotals]) -> CostTotals:
    return CostTotals(*(sum(getattr(t, f.name) for t in items) for f in fields(CostTotals)))


def spend_summary(con: store.Connection, cfg: CanaryConfig, model: str | None, now: datetime) -> dict[str, Any]:
    """The canary's spend: today, each of the last SPEND_DAYS UTC days, per model; all models unless `model`."""
    today = now.date()
    first = today - timedelta(days=SPEND_DAYS - 1)
    costs = {k: t for k, t in store.daily_costs(con, first, today).items() if model is None or k[1] == model}
    days = [first + timedelta(days=i) for i in range(SPEND_DAYS)][::-1]
    models = sorted({m for _, m in costs})
    projection = store.read_projection(con, now, cfg.interval_min, [model] if model else None)
    return {
        "today": _totals_json(_sum([t for (d, _), t in costs.items() if d == today])),
        "days": [{"day": d.isoformat(), **_totals_json(_sum([t for (x, _), t in costs.items() if x == d]))}
                 for d in days],
        "models": [{"model": m, "today": _totals_json(costs.get((today, m), CostTotals())),
                    f"last_{SPEND_DAYS}_days": _totals_json(_sum([t for (_, x), t in costs.items() if x == m]))}
                   for m in models],
        "projected_usd_per_day": projection.usd_per_day,
        "budget_usd_per_day": cfg.budget_usd_per_day,
    }


def failed_alerts_line(outbox: dict[str, Any]) -> str:
    """One line: how many alerts Slack refused for good, and the latest (its error, kind, model)."""
    last = outbox["last_failed"]
    return (f"alerts refused by Slack for good (kept in the alerts table, status failed): {outbox['failed']};"
            f" latest {name(last['kind'], 'log', 40)} on {name(last['model'], 'log', 60)}:"
            f" {name(last['error'] or '?', 'log', 120)}")


def round_lines(report: dict[str, Any]) -> list[str]:
    """The recent rounds, the ones waiting in the spool, and the outbox's troubles: one line each."""
    lines = []
    for rd in report["rounds"]:
        late = " (deferred: landed late)" if rd["deferred"] else ""
        step = f" at step {rd['step']}" if rd["status"] in (RoundState.CRASHED, RoundState.FAILED) else ""
        why = f": {rd['error']}" if rd["status"] == RoundState.FAILED and rd.get("error") else ""
        lines.append(f"round {rd['round_id']}: {rd['status']}{step}{late}, {rd['attempt_count']} attempts{why}")
    lines += [f"round {rid}: deferred (probed, waiting in the spool for the next round to land it)"
              for rid in report["deferred_waiting"]]
    if report["possible_duplicate_alerts"]:
        lines.append("alerts possibly posted twice (at-least-once delivery, see README): "
                     f"{report['possible_duplicate_alerts']}")
    if report["alerts"]["failed"]:
        lines.append(failed_alerts_line(report["alerts"]))
    return lines


def status_command(*, config: Path | None, model: str | None, json_out: bool, db: str | None) -> None:
    cfg = admin_config(config, db)
    models = [_model(cfg, model)] if model else list(cfg.models)
    require_database(cfg)
    now = utcnow()
    from tasks.alerts.route import slack_warning
    from tasks.spool.journal import spooled_rounds

    with store.open_store(cfg.db_path, read_only=True) as con:
        mode = store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value
        ignores = [current_ignore_list(con, cfg, m, None, now) for m in models]
        rows = [r for m, ig in zip(models, ignores, strict=True) for r in status_rows(con, cfg, m, now, ig)]
        rounds = store.recent_rounds(con, models, per_model=3)
        duplicates = store.possible_duplicate_alerts(con)
        outbox = store.alert_health(con)
        spend = spend_summary(con, cfg, models[0] if model else None, now)
    waiting = [r.info.round_id for r in spooled_rounds(cfg.db_path) if r.info.model in models]
    live = live_evidence_status(cfg)
    report = {"mode": mode, "endpoints": rows, "rounds": rounds, "deferred_waiting": waiting,
              "possible_duplicate_alerts": duplicates, "alerts": outbox, "spend": spend,
              "excluded_now": [e for ig in ignores for e in excluded_now(ig)], "live_evidence": live,
              "slack_warning": slack_warning()}
    if json_out:
        _print_json(report)
        return
    lines = status_lines(report, models, round_lines=round_lines(report))
    for line in [lines[0], *([live["line"]] if "line" in live else []), *lines[1:]]:
        typer.echo(line)


def live_evidence_status(cfg: CanaryConfig) -> dict[str, Any]:
    """Where the watcher's live evidence comes from; with Prometheus, whether it answers now (one query)."""
    if cfg.live_source != "prometheus":
        return {"source": cfg.live_source}
    from tasks.watch.live_prometheus import live_source_health

    health = live_source_health(cfg)
    return {"source": cfg.live_source, "url": health.url, "up": health.up, "routers": health.routers,
            "error": health.error, "line": health.line()}


def exclude_list_command(*, config: Path | None, json_out: bool, history: bool, db: str | None) -> None:
    cfg = admin_config(config, db)
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
    from tasks.core.replay_input import build_replay_lines

    cfg = admin_config(config, db)
    require_database(cfg)
    from tasks.core.exclusions import load_builtin
    from tasks.store.settlement import partial_round_ids

    builtin = load_builtin(cfg.exclusions_file)
    layers: dict[tuple[str, str], dict[str, object]] = {}
    with store.open_store(cfg.db_path, read_only=True) as con:
        frame = store.round_status_history(con, model=_model(cfg, model) if model else None)
        partial = partial_round_ids(con)  # confirmation rounds: their lines say "partial": true
        for m, ts in frame[["model", "round_ts"]].drop_duplicates().itertuples(index=False):
            at = ts.to_pydatetime()
            ops = store.exclusions_as_of(con, at, model=m)
            layers[(m, at.isoformat())] = {
                "builtin": [b.tag for b in builtin if b.model in (None, m)],
                "operational": [{"tag": o.tag, "until": o.until.isoformat() if o.until else None} for o in ops],
            }
    frame = frame.assign(partial=frame["round_id"].isin(partial)) if not frame.empty else frame
    n = 0
    written: set[tuple[str, str]] = set()
    with open(out, "w", encoding="utf-8") as fh:
        for line in build_replay_lines(frame):
            key = (line["model"], datetime.fromisoformat(line["round_ts"]).isoformat())
            if key not in written and key in layers:  # the layers in force, before the round's first status
                fh.write(json.dumps({"round_ts": line["round_ts"], "model": line["model"], **layers[key]}) + "\n")
                written.add(key)
                n += 1
            fh.write(json.dumps(line, default=str) + "\n")
            n += 1
    typer.echo(f"wrote {n} lines to {out}")
