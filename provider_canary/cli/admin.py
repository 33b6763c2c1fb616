"""Admin commands: status, ignore-list, exclude add/remove/list, lift, mode, export-history.

Every command works on an existing database only (a missing one is one line naming the path, exit 2), and
read commands open it read-only: they never create a file, a directory or a snapshot.

Every change is effective at once: it is written to DuckDB in one transaction together with the alerts it
raises (the outbox), the ignore list of each affected model is republished as JSON, the window is closed,
and only then are the alerts delivered (`_deliver_after_close`: never Slack while the database is open).
With a Prefect API configured (PREFECT_API_URL) the keyed artifact and the operational Variable are refreshed
too; without one no temporary Prefect server is started: the next round refreshes them.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import typer

from provider_canary.cli.runs import require_database, resolve_cli_config
from tasks import store
from tasks.config import CanaryConfig
from tasks.config.loading import parse_duration
from tasks.core.canary_events import CanaryEvent
from tasks.core.exclusions import is_valid_tag, matches
from tasks.core.types import Decision, IgnoreList, Mode, OperationalExclusion
from tasks.errors import CanaryError, ConfigError
from tasks.ignore_list.publish import artifact_key, claim_publish_dir, current_ignore_list, write_ignore_file
from tasks.runtime.clock import utcnow
from tasks.store.history import known_tags
from tasks.store.state import load_policy_states, replace_policy_states


def _who(who: str | None) -> str:
    if who:
        return who
    try:
        return os.environ.get("USER") or getpass.getuser()
    except Exception:
        return "admin"


def admin_config(config: Path | None, db: str | None) -> CanaryConfig:
    """An admin command's config. With `--db` naming an existing database, its models are the database's own (a
    shard holds its models; canary.toml, shared by every shard, lists others or none of them), when it holds any:
    `canary status --db shard-b.duckdb` shows shard B's models, `canary lift --db shard-b.duckdb --model M` takes
    a model of shard B."""
    cfg = resolve_cli_config(config, db=db)
    if db is None or not Path(cfg.db_path).expanduser().is_file():
        return cfg
    from tasks.store.history import models_of

    with store.open_store(cfg.db_path, read_only=True) as con:
        own = models_of(con)
    return replace(cfg, models=tuple(own)) if own else cfg


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


def after_change(cfg: CanaryConfig, lists: list[IgnoreList], now: datetime,
                 events: Sequence[CanaryEvent] = ()) -> None:
    """Refresh what lives in Prefect (the keyed artifacts, the operational Variable) and emit the change's
    events (a lift's `canary.endpoint.lifted`), after the change is saved and its alert queued.

    Only with a Prefect API configured: without one this would start a temporary server (~10 s) for an
    artifact nobody can see afterwards, so the command says how the refresh happens instead.
    """
    if not os.environ.get("PREFECT_API_URL"):
        keys = ", ".join(artifact_key(il.model) for il in lists) or "none"
        typer.echo(
            f"Prefect artifact(s) {keys}: refreshed by the next round "
            "(set PREFECT_API_URL to a Prefect server to refresh them at once)"
        )
        return
    from flows.publish import publish_ignore_artifacts
    from tasks.ignore_list import variable_sync

    variable_sync.sync(cfg.db_path, now)
    try:
        publish_ignore_artifacts([il.as_json() for il in lists])
    except Exception as exc:  # the JSON file is already published; the artifact catches up next round
        typer.echo(f"canary: warning: artifact not refreshed ({type(exc).__name__})", err=True)
    if events:
        from tasks.orchestration.prefect_events import emit_canary_events
        from tasks.prefect_api.private_server import drain_prefect_workers

        emit_canary_events(events)
        drain_prefect_workers()  # the events worker sends in the background: before the command exits


def _deliver_after_close(cfg: CanaryConfig) -> None:
    """Deliver the alerts queued in the outbox, called once the command's write window is closed.

    The one place admin commands send alerts. Slack settings come from the environment; Prefect Secret blocks
    are read only when a Prefect API is configured (otherwise reading them starts a temporary server).
    """
    from tasks.alerts.delivery_loop import deliver_paced
    from tasks.alerts.slack_settings import SlackSettings

    try:
        settings = SlackSettings.from_env(None if os.environ.get("PREFECT_API_URL") else dict(os.environ))
        summary = deliver_paced(cfg.db_path, settings, utcnow())
    except CanaryError as exc:  # the change is made and its alert queued: the next round delivers it
        typer.echo(f"canary: warning: alert kept in the outbox ({exc})", err=True)
        return
    if summary.skipped:
        typer.echo("alerts: kept in the outbox (the database is busy); the next round delivers them")
    elif summary.failed or summary.not_attempted or summary.unknown:
        kept = summary.failed + summary.not_attempted + summary.unknown
        typer.echo(
            f"alerts: {summary.sent} sent, {kept} kept in the outbox"
            f" ({'; '.join(summary.errors) or 'not yet due'}); the next round retries them"
        )
    elif summary.sent:
        typer.echo(f"alerts: {summary.sent} sent ({summary.transport})")


def _print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, default=str))


def _unseen_warning(con: store.Connection, cfg: CanaryConfig, tag: str, model: str | None) -> str | None:
    """Why `tag` looks like a typo: no endpoint of the last discovery (of `model`, or any model) matches."""
    models = [model] if model else list(cfg.models)
    seen = {t for m in models for t in known_tags(con, m)}
    if any(matches(tag, t) for t in seen):
        return None
    if not seen:
        return f"no discovery is recorded yet for {', '.join(models)}, so {tag!r} cannot be checked"
    seen_list = ", ".join(sorted(seen))
    return f"the last discovery of {', '.join(models)} saw no endpoint {tag!r} (seen: {seen_list})"


def _begin_change(cfg: CanaryConfig) -> None:
    """Before any write: the database exists and the publish directory is its own (else exit 2, no change)."""
    require_database(cfg)
    claim_publish_dir(cfg)


def exclude_add_command(
    *,
    tag: str,
    reason: str,
    model: str | None,
    until: str | None,
    who: str | None,
    config: Path | None,
    db: str | None,
    force: bool = False,
) -> None:
    cfg = admin_config(config, db)
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
    _begin_change(cfg)
    with store.open_store(cfg.db_path) as con:
        unseen = _unseen_warning(con, cfg, excl.tag, m)
        if unseen and not force:
            raise ConfigError(f"exclude: {unseen}; check the tag (`canary status`) or add --force")
        store.add_exclusion(con, excl)
        lists = republish(con, cfg, now, [m] if m else None)
    if unseen:
        typer.echo(f"canary: warning: {unseen} (added anyway: --force)", err=True)
    typer.echo(
        f"excluded {excl.tag}"
        + (f" for {m}" if m else " for every model")
        + (f" until {until_ts:%Y-%m-%d %H:%M UTC}" if until_ts else "")
    )
    after_change(cfg, lists, now)


def exclude_remove_command(
    *, tag: str, model: str | None, reason: str, who: str | None, config: Path | None, db: str | None
) -> None:
    cfg = admin_config(config, db)
    m = _model(cfg, model) if model else None
    now = utcnow()
    _begin_change(cfg)
    with store.open_store(cfg.db_path) as con:
        closed = store.remove_exclusion(con, _tag(tag), m, _who(who), reason, now)
        if not closed:
            raise ConfigError(
                f"exclude: no active operational exclusion of {tag!r}"
                + (f" for {m}" if m else " for every model (try --model)")
            )
        lists = republish(con, cfg, now, [m] if m else None)
    typer.echo(f"removed the operational exclusion of {tag}")
    after_change(cfg, lists, now)


def _until(ts: datetime | None) -> str:
    return f"{ts:%Y-%m-%d %H:%M UTC}" if ts else "-"


def lift_command(
    *, tag: str, reason: str, model: str | None, who: str | None, config: Path | None, db: str | None
) -> None:
    from tasks.alerts.links import round_links
    from tasks.core.canary_events import decision_events
    from tasks.core.policy import PolicyConfig, lift
    from tasks.core.render.decision_groups import decision_messages
    from tasks.core.render.links import with_links
    from tasks.store.alert_threads import record_decision_threads, suspension_threads

    cfg = admin_config(config, db)
    m = _model(cfg, model)
    now = utcnow()
    _begin_change(cfg)
    with store.open_store(cfg.db_path) as con:
        with store.transaction(con):  # the change, its decision and its alert land together or not at all
            mode = Mode(store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value)
            new_states, decisions = lift(
                load_policy_states(con, m, mode),
                tag.strip().lower(),
                now,
                _who(who),
                reason,
                replace(PolicyConfig.from_config(cfg), mode=mode),
            )
            if not decisions:
                raise ConfigError(f"lift: {tag!r} is not suspended on {m} (see `canary status`)")
            replace_policy_states(con, m, mode, list(new_states.values()))
            store.append_decisions(con, decisions)
            lists = [current_ignore_list(con, cfg, m, None, now)]
            # in the thread of the message that announced the suspension, when it has one
            messages = decision_messages(decisions, suspension_threads(con, m, [d.tag for d in decisions]),
                                         {m: lists[0]})
            record_decision_threads(con, messages.threads)
            store.enqueue_alerts(con, [with_links(a, round_links(cfg)) for a in messages.alerts])
        for ignore in lists:
            write_ignore_file(cfg, ignore)
    d = decisions[0]
    typer.echo(
        f"lifted {d.tag} on {m} ({mode} mode; was suspended until {_until(d.until)}, ladder step "
        f"{d.ladder_step}): " + ("back in routing now" if mode is Mode.ENFORCE else "shadow suspension ended")
    )
    typer.echo(f"{m}: provider.ignore = {json.dumps(list(lists[0].ignore))}; alert queued")
    _deliver_after_close(cfg)
    after_change(cfg, lists, now, decision_events(decisions))


def mode_command(*, new_mode: str, config: Path | None, db: str | None) -> None:
    from provider_canary.cli.mode_switch import mode_switch_alert, mode_switch_lines
    from tasks.alerts.links import round_links
    from tasks.core.canary_events import mode_switch_event
    from tasks.core.policy import carry_over
    from tasks.core.render.links import with_links

    try:
        target = Mode(new_mode)
    except ValueError:
        raise ConfigError(f"mode: must be 'observe' or 'enforce' (got {new_mode!r})") from None
    cfg = admin_config(config, db)
    now = utcnow()
    who = _who(None)
    lists: list[IgnoreList] = []
    dropped: list[Decision] = []
    _begin_change(cfg)
    with store.open_store(cfg.db_path) as con:
        with store.transaction(con):  # the switch, its decisions and its alert land together
            previous = store.get_setting(con, store.MODE_KEY, None) or cfg.mode.value
            store.set_setting(con, store.MODE_KEY, target.value, at=now, who=who)
            for m in cfg.models:
                states, decisions = carry_over(load_policy_states(con, m, target), target, now)
                replace_policy_states(con, m, target, list(states.values()))
                store.append_decisions(con, decisions)
                dropped += decisions
                lists.append(current_ignore_list(con, cfg, m, None, now))
            lines = mode_switch_lines(target, previous, dropped)
            events = []
            if previous != target.value or dropped:
                alert = with_links(mode_switch_alert(target, who, lines, list(cfg.models), now), round_links(cfg))
                store.enqueue_alerts(con, [alert])
                events.append(mode_switch_event(alert, target.value, previous, who, dropped))
        for ignore in lists:
            write_ignore_file(cfg, ignore)
    for line in lines:
        typer.echo(line)
    for ignore in lists:
        typer.echo(f"{ignore.model}: provider.ignore = {json.dumps(list(ignore.ignore))}")
    _deliver_after_close(cfg)
    after_change(cfg, lists, now, events)


__all__ = ["parse_until", "republish"]
