"""`canary at --model M --time T [--window 2h] [--json]`: answer a user's report from the DuckDB history.

Reads the database read-only (a short read window on the live file; `fetch_report_inputs` takes any store
connection, so notebooks pass the analysts' snapshot) and hands DataFrames to the pure `tasks.at`.
Bad --time/--window, a missing database or an unknown model: one line on stderr, exit 2.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import typer

from tasks.at import build_report, parse_time, parse_window
from tasks.at_records import Report
from tasks.errors import CanaryError, ConfigError

#: How far before the window `failing_since` looks for the start of a failing run.
LOOKBACK = timedelta(days=7)

__all__ = ["at_command", "fetch_report_inputs", "format_report", "report_from_connection"]


def fetch_report_inputs(con: Any, model: str, since: datetime, until: datetime) -> dict[str, pd.DataFrame]:
    """The rows `tasks.at.build_report` needs, from any store connection (live file or snapshot)."""
    window = [model, since, until]

    def df(sql: str, params: list[Any]) -> pd.DataFrame:
        frame: pd.DataFrame = con.execute(sql, params).df()
        return frame

    outcomes_sql = (
        "SELECT o.*, r.round_ts FROM outcomes o JOIN rounds r USING (round_id)"
        " WHERE o.model = ? AND r.round_ts BETWEEN ? AND ? ORDER BY r.round_ts, o.tag, o.contract"
    )
    return {
        "endpoint_rounds": df(
            "SELECT round_id, round_ts, tag, provider_name, status, fail_reasons FROM v_endpoint_rounds"
            " WHERE model = ? AND round_ts BETWEEN ? AND ? ORDER BY round_ts, tag",
            window,
        ),
        "outcomes": df(outcomes_sql, window),
        "attempts": df(
            "SELECT a.round_id, a.tag, a.contract, a.attempt_no, a.excerpt, a.error_detail FROM v_attempts a"
            " WHERE a.model = ? AND a.round_ts BETWEEN ? AND ? AND a.outcome IS DISTINCT FROM 'pass'",
            window,
        ),
        "suspensions": df("SELECT * FROM v_suspensions WHERE model = ? AND started_at <= ?", [model, until]),
        "decisions": df(
            "SELECT * FROM decisions WHERE model = ? AND decided_at BETWEEN ? AND ? ORDER BY decided_at, tag",
            window,
        ),
        "exclusions": df(
            "SELECT * FROM exclusions WHERE model IS NULL OR model = ? ORDER BY added_at", [model]
        ),
        "lookback": df(
            "SELECT round_ts, tag, status FROM v_endpoint_rounds WHERE model = ? AND round_ts BETWEEN ? AND ?"
            " ORDER BY round_ts, tag",
            [model, since - LOOKBACK, since + (until - since) / 2],
        ),
        "route_events": df(
            "SELECT * FROM route_events WHERE model = ? AND event_at BETWEEN ? AND ? ORDER BY event_at",
            window,
        ),
        "suspicions": df(
            "SELECT * FROM suspicions WHERE model = ? AND detected_at BETWEEN ? AND ? ORDER BY detected_at, tag",
            window,
        ),
    }


def report_from_connection(
    con: Any, model: str, t: datetime, window: timedelta, builtin: list[Any] | None = None
) -> Report:
    """Fetch and build in one call (the CLI and the notebooks)."""
    known = [r[0] for r in con.execute("SELECT DISTINCT model FROM rounds ORDER BY 1").fetchall()]
    if model not in known:
        raise ConfigError(
            f"at: no rounds of {model!r} in the database (models: {', '.join(known) or 'none'})"
        )
    inputs = fetch_report_inputs(con, model, t - window, t + window)
    return build_report(model, t, window, builtin=builtin or [], **inputs)


def _onset(since: datetime | None) -> str:
    return f"failing since {since:%m-%d %H:%M}, " if since else ""


def _when(ts: datetime | None) -> str:
    return ts.strftime("%m-%d %H:%M") if ts else "-"


def format_report(r: Report) -> str:
    """Readable text: the suspects first, then what was excluded at T, then the details."""
    by_tag = {e.tag: e for e in r.endpoints}
    lines = [
        f"{r.model} around {r.time:%Y-%m-%d %H:%M} UTC "
        f"(rounds {r.since:%m-%d %H:%M} .. {r.until:%m-%d %H:%M}, {len(r.round_ids)} rounds, nearest "
        f"{r.nearest_round or '-'})",
        *[f"note: {n}" for n in r.notes],
        "",
        "Suspects (most recent onset first): "
        + (
            ", ".join(
                f"{e.tag} ({_onset(e.failing_since)}{e.failing_rounds} fail, "
                f"{e.statuses.get('transport', 0)} transport)"
                for e in (by_tag[tag] for tag in r.suspects)
            )
            or "none"
        ),
        f"Ignore list in force at T: {json.dumps(list(r.ignore_at_t))}",
    ]
    for entry in r.in_force:
        until = f" until {_when(entry.until)}" if entry.until else ""
        since = f" since {_when(entry.since)}" if entry.since else ""
        lines.append(f"  {entry.tag:<18} {entry.layer:<12}{since}{until}  {entry.reason}")
    lines += ["", "Endpoints probed:"]
    for e in r.endpoints:
        counts = " ".join(f"{k}={v}" for k, v in sorted(e.statuses.items()))
        lines.append(f"  {e.tag:<18} {e.provider_name:<15} at T: {e.status_at_t or '-':<12} {counts}")
        for fd in e.findings:
            lang = f" [{fd.language}]" if fd.language else ""
            lines.append(
                f"      {_when(fd.round_ts)} {fd.contract}{lang} {fd.outcome} {fd.reason}: {fd.evidence}"
            )
            if fd.excerpt:
                lines.append(f"        reply: {fd.excerpt!r}")
        if e.more_findings:
            lines.append(f"      ... {e.more_findings} more")
    if r.decisions:
        lines += ["", "Decisions in the window:"]
        for d in r.decisions:
            until = f" until {_when(d.get('until'))}" if d.get("until") else ""
            lines.append(
                f"  {_when(d['decided_at'])} {d['action']:<14} {d['tag']}{until}  {d.get('reason') or ''}"
            )
    if r.exclusion_changes:
        lines += ["", "Operational exclusion changes in the window:"]
        for c in r.exclusion_changes:
            removed = (
                f", removed {_when(c.get('removed_at'))} ({c.get('removed_reason')})"
                if c.get("removed_at")
                else ""
            )
            lines.append(
                f"  {c['tag']:<18} added {_when(c['added_at'])} by {c.get('who')}{removed}: {c['reason']}"
            )
    lines += ["", "Suspicions (live traffic, OpenRouter's uptime; only pinned probes decide): "
              + (str(len(r.suspicions)) if r.suspicions else "none")]
    for sp in r.suspicions:
        by = f" by {sp['confirm_round_id']} ({sp['round_status']})" if sp.get("confirm_round_id") else ""
        note = f"; {sp['note']}" if sp.get("note") else ""
        lines.append(f"  {_when(sp.get('detected_at'))} {sp['tag']:<18} {sp['signal']}: {sp['evidence']} -> "
                     f"{sp['status']}{by}{note}")
    lines += ["", f"Route events for {r.model}: " + (str(len(r.route_events)) if r.route_events else "none")]
    for ev in r.route_events:
        lines.append(
            f"  {_when(ev.get('event_at'))} tier {ev.get('tier')} {ev.get('reason')} {ev.get('upstream')}"
        )
    return "\n".join(lines)


def _report(model: str, time: str, window: str, config: Path | None, db: str | None) -> Report:
    from cli.runs import require_database, resolve_cli_config
    from tasks import store
    from tasks.core.exclusions import load_builtin

    t, w = parse_time(time), parse_window(window)
    cfg = resolve_cli_config(config, db=db)
    require_database(cfg)
    builtin = load_builtin(cfg.exclusions_file) if Path(cfg.exclusions_file).exists() else []
    with store.open_store(cfg.db_path, read_only=True) as con:
        return report_from_connection(con, model, t, w, builtin)


def at_command(
    *, model: str, time: str, window: str, config: Path | None, json_out: bool, db: str | None
) -> None:
    try:
        report = _report(model, time, window, config, db)
    except CanaryError as exc:  # one line, exit 2, also when the app runs without cli.main (tests, embedding)
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from None
    if json_out:
        typer.echo(json.dumps(report.as_json(), indent=2))
    else:
        typer.echo(format_report(report))
