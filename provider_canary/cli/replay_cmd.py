"""`canary replay ROUNDS.jsonl`: run the policy over recorded round statuses (see tasks/core/replay.py).

stdout: one decision per line: `{"at", "model", "tag", "action", "until", "ladder_step"}` with --json,
        else the same fields as aligned text. With --summary: the summary table (JSON with --json) instead.
stderr: the summary table (the base setting: `baseline`, or the --set overrides; then one line per --compare
        variant, labelled with every override it ran with) after the decisions.
Exit 2 with one stderr line on a bad input line (named by number), a bad config or a bad --set.

    canary replay rounds.jsonl --set fail_rounds=3 --set min_hosts=1
    canary replay rounds.jsonl --summary --compare "fail_rounds=3" --compare "restore_rounds=4 min_hosts=1"
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from tasks.config.loading import load_config, variant
from tasks.core.replay import decision_line, replay
from tasks.core.replay_input import parse_replay
from tasks.core.replay_summary import format_summaries, summarize, what_if
from tasks.errors import CanaryError, ConfigError

__all__ = ["parse_set", "replay_command"]


def parse_set(items: Iterable[str]) -> dict[str, str]:
    """`key=value` strings -> overrides for tasks.config.loading.apply_overrides."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value (got {item!r})")
        out[key.strip()] = value.strip()
    return out


def _lines(path: Path) -> Iterator[str]:
    if str(path) == "-":
        yield from sys.stdin
        return
    try:
        with path.open(encoding="utf-8") as fh:
            yield from fh
    except FileNotFoundError:
        raise ConfigError(f"replay: file {path} not found") from None
    except UnicodeDecodeError:
        raise ConfigError(f"replay: {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"replay: cannot read {path} ({exc.strerror or exc.__class__.__name__})") from None


def _text_line(row: dict[str, Any]) -> str:
    return (f"{row['at']}  {row['model']}  {row['tag']}  {row['action']}  until={row['until'] or '-'}  "
            f"step={row['ladder_step']}")


def _run(path: Path, config: Path | None, set_: list[str], json_out: bool, summary: bool,
         compare: list[str], out: TextIO, err: TextIO) -> None:
    overrides = parse_set(set_)
    configured = load_config(config)
    # The rows are labelled with the setting they ran: `baseline` is the config file as it is; with --set, the
    # base row is the overrides (`fail_rounds=3`) and each --compare row adds its own to them.
    base = variant(configured, overrides)
    cfg = base.cfg
    variants = [variant(configured, {**overrides, **parse_set(spec.split())})  # a bad one: refused before any
                for spec in compare]                                           # output
    history = parse_replay(_lines(path))
    if base.sets_mode:  # else each round in the mode its lines recorded (the configured one if none)
        history = history.in_mode(cfg.mode)
    if summary:
        summaries = what_if(history, cfg, variants, label=base.label)
        if json_out:
            for s in summaries:
                out.write(json.dumps(s.as_json()) + "\n")
        else:
            out.write("\n".join(format_summaries(summaries)) + "\n")
        return
    decisions = replay(history, cfg)
    for d in decisions:
        row = decision_line(d)
        out.write((json.dumps(row) if json_out else _text_line(row)) + "\n")
    out.flush()
    summaries = [summarize(decisions, history, base.label)]
    if variants:
        summaries += what_if(history, cfg, variants, label=base.label)[1:]
    err.write("\n".join(format_summaries(summaries)) + "\n")


def replay_command(
    path: Annotated[Path, typer.Argument(help="Replay input: JSON Lines of round statuses ('-' for stdin).")],
    config: Annotated[
        Path | None, typer.Option("--config", help="Config TOML (default canary.toml).")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a config key, key=value (repeatable).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON lines instead of text.")] = False,
    summary: Annotated[
        bool, typer.Option("--summary", help="Print only the what-if summary on stdout.")
    ] = False,
    compare: Annotated[
        list[str] | None,
        typer.Option("--compare", help="A what-if variant, e.g. 'fail_rounds=3 min_hosts=1' (repeatable)."),
    ] = None,
) -> None:
    """Run the policy over recorded round statuses; one decision per line on stdout."""
    try:
        _run(path, config, set_ or [], json_out, summary, compare or [], sys.stdout, sys.stderr)
    except CanaryError as exc:
        typer.echo(f"canary: {exc}", err=True)
        raise typer.Exit(2) from None
