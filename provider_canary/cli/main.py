"""`canary`: the command line (docs/design.md "Outside interfaces").

Every command is a thin shell over a function elsewhere; heavy imports happen inside the command so that
`--help` is instant. Exit codes: 0 done; 1 a finding (`check-language` judged `fail`) or an internal error;
2 a `CanaryError` (bad config, missing key or database, unreachable URL...), printed as one line on stderr;
130 interrupted. No traceback reaches a user unless CANARY_DEBUG=1 (then every error shows one).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from provider_canary.cli.admin_app import exclude_app, ignore_list, lift, mode
from provider_canary.cli.deadman_cmd import deadman_automation
from provider_canary.cli.debug import debug_enabled, traceback_if_debug
from provider_canary.cli.options import ConfigOpt, DbOpt, EveryModelOpt, JsonOpt, ModelOpt
from provider_canary.cli.router_app import router_app

# Prefect offline defaults (docs/design.md "Platform notes"), set before anything imports prefect.
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")

app = typer.Typer(
    name="canary",
    help="Provider canary and routing quarantine for OpenRouter traffic.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(exclude_app, name="exclude")  # provider_canary/cli/admin_app.py

@app.command()
def demo(
    rounds: Annotated[int, typer.Option(help="rounds to run (30 simulated minutes apart)")] = 4,
    days: Annotated[
        float, typer.Option(help="instead: simulate this many days of history (48 rounds/day)")
    ] = 0,
    db: Annotated[
        str, typer.Option("--db", help="DuckDB file the demo leaves for the notebooks")
    ] = "demo.duckdb",
    flow_runs: Annotated[
        bool, typer.Option("--flow-runs", help="with --days: a canary-round flow run per round (~4x slower)")
    ] = False,
    replace: Annotated[
        bool, typer.Option("--replace", help="replace --db even if it holds an operator's exclusions, lifts or mode")
    ] = False,
) -> None:
    """Run the built-in simulator with a faulty fleet and rounds on a compressed clock (no key needed)."""
    from provider_canary.demo.replace_guard import refuse_to_replace
    from provider_canary.demo.run import run_demo
    from tasks.config import CanaryConfig
    from tasks.config.preflight import preflight

    preflight(CanaryConfig(db_path=db, publish_dir=str(Path(db).parent)))  # its JSON goes next to the db
    refuse_to_replace(db, replace=replace)  # an operator's changes are not the demo's to throw away
    run_demo(rounds=rounds, days=days, db_path=db, engine="flow" if flow_runs else None)


@app.command()
def run(
    config: ConfigOpt = None,
    model: EveryModelOpt = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenRouter-compatible API base")] = None,
    mode: Annotated[
        str | None, typer.Option("--mode", help="observe | enforce, for this run only (not a mode switch)")
    ] = None,
    db: DbOpt = None,
) -> None:
    """Run one cycle now: a canary-cycle flow run with a canary-round run per model (every configured model
    unless --model), concurrently; exit 1 when a round did not complete."""
    from provider_canary.cli.runs import run_once

    code = run_once(config=config, model=model, base_url=base_url, mode=mode, db=db)
    if code:
        raise typer.Exit(code)


@app.command()
def serve(
    config: ConfigOpt = None,
    metrics_port: Annotated[
        int, typer.Option("--metrics-port", help="serve `canary metrics` on this port too (0: off)")
    ] = 0,
    metrics_addr: Annotated[
        str, typer.Option("--metrics-addr", help="the address --metrics-port listens on (routers on other hosts "
                          "read the lists at /lists there)")
    ] = "127.0.0.1",
) -> None:
    """Serve the canary-cycle deployment (every configured model's round each interval_min) and the
    canary-deadman check, and apply the dead-man automation (needs PREFECT_API_URL); with --metrics-port, the
    Prometheus exposition and the ignore lists (`GET /lists/<model-slug>.json`) too."""
    from provider_canary.cli.serve_cmd import serve_deployment
    from tasks.config.loading import load_config
    from tasks.config.preflight import preflight

    preflight(load_config(config))
    serve_deployment(config, metrics_port=metrics_port, metrics_addr=metrics_addr)


app.command(name="deadman-automation")(deadman_automation)  # provider_canary/cli/deadman_cmd.py


@app.command()
def watch(
    config: ConfigOpt = None,
    once: Annotated[bool, typer.Option("--once", help="look once, print what was found, exit")] = False,
    json_out: JsonOpt = False,
    db: Annotated[list[str] | None, typer.Option(
        "--db", help="a shard's DuckDB file to follow (its own models, its canary-cycle-<stem> deployment); "
                     "repeat for several shards")] = None,
) -> None:
    """The watcher as its own service (the work-pool path; `canary serve` runs it in-process): live traffic and
    OpenRouter's uptime as suspicions, each confirmed by a Scheduled canary-cycle run (needs PREFECT_API_URL)."""
    from provider_canary.cli.watch_cmd import watch_command

    watch_command(config, once=once, json_out=json_out, dbs=db)


@app.command()
def simulator(
    port: Annotated[int, typer.Option(help="port on 127.0.0.1")] = 8787,
    fleet: Annotated[
        Path | None, typer.Option(help="fleet TOML (default: the built-in faulty fleet)")
    ] = None,
    time_scale: Annotated[float, typer.Option(help="multiply every simulated delay")] = 1.0,
) -> None:
    """Run the OpenRouter-compatible simulator."""
    from provider_canary.cli.simulator_cmd import simulator_command

    simulator_command(port=port, fleet=fleet, time_scale=time_scale)


@app.command()
def status(
    config: ConfigOpt = None, model: EveryModelOpt = None, json_out: JsonOpt = False, db: DbOpt = None
) -> None:
    """Per endpoint: state, streaks, suspension end, the layer that excludes it."""
    from provider_canary.cli.admin_read import status_command

    status_command(config=config, model=model, json_out=json_out, db=db)


app.command("ignore-list")(ignore_list)  # provider_canary/cli/admin_app.py
app.command()(lift)
app.command()(mode)


@app.command("check-language")
def check_language(
    expected: Annotated[str, typer.Option("--expected", help="language code, e.g. pt")],
    json_out: JsonOpt = False,
) -> None:
    """Judge the text on stdin: outcome, reason, detected language, confidence (exit 1 on fail)."""
    from provider_canary.cli.check_language import check_language_command

    code = check_language_command(expected=expected, json_out=json_out)
    if code:
        raise typer.Exit(code)


@app.command()
def replay(
    rounds_file: Annotated[Path, typer.Argument(metavar="ROUNDS.jsonl")],
    config: ConfigOpt = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value threshold override")] = None,
    json_out: JsonOpt = False,
    summary: Annotated[bool, typer.Option("--summary", help="print only the what-if summary")] = False,
    compare: Annotated[
        list[str] | None, typer.Option("--compare", help='what-if variant, e.g. "fail_rounds=3 min_hosts=1"')
    ] = None,
) -> None:
    """Run the policy over recorded round statuses; one decision per line ('-' reads stdin)."""
    from provider_canary.cli.replay_cmd import replay_command

    replay_command(
        rounds_file, config=config, set_=set_ or [], json_out=json_out, summary=summary, compare=compare
    )


@app.command("export-history")
def export_history(
    out: Annotated[Path, typer.Argument(metavar="ROUNDS.jsonl")],
    config: ConfigOpt = None,
    model: ModelOpt = None,
    db: DbOpt = None,
) -> None:
    """Write the DuckDB round-status history as replay JSONL."""
    from provider_canary.cli.admin_read import export_history_command

    export_history_command(out=out, config=config, model=model, db=db)


@app.command()
def at(
    model: Annotated[str, typer.Option("--model", help="the model the user reported")],
    time: Annotated[str, typer.Option("--time", help="approximate time of the report (ISO, UTC)")],
    window: Annotated[str, typer.Option("--window", help="look this far either side")] = "2h",
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    db: DbOpt = None,
) -> None:
    """Answer a user's report: what the canary saw around that time."""
    from provider_canary.cli.at_cmd import at_command

    at_command(model=model, time=time, window=window, config=config, json_out=json_out, db=db)


@app.command()
def catalog(
    dbs: Annotated[list[Path], typer.Argument(metavar="DB...", help="each shard's DuckDB file")],
    sql: Annotated[str | None, typer.Option("--sql", help="a query over every shard (column `shard`)")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Every shard's snapshot as one read-only catalog: a line per shard, or --sql over all of them."""
    from provider_canary.cli.catalog_cmd import catalog_command

    catalog_command(dbs=dbs, sql=sql, json_out=json_out)


@app.command()
def metrics(
    db: Annotated[list[str] | None, typer.Option("--db", help="DuckDB file; repeat for several shards")] = None,
    config: ConfigOpt = None,
    port: Annotated[int, typer.Option(help="port of the /metrics endpoint")] = 9464,
    addr: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    once: Annotated[bool, typer.Option("--once", help="print one scrape on stdout and exit")] = False,
) -> None:
    """Prometheus exposition of the canary's state, read from the analysts' snapshot at each scrape."""
    from provider_canary.cli.metrics_cmd import metrics_command

    metrics_command(dbs=list(db or []), config=config, port=port, addr=addr, once=once)


app.add_typer(router_app, name="router")  # provider_canary/cli/router_app.py


def main() -> None:
    from tasks.errors import CanaryError
    from tasks.runtime.arenas import cap_arenas
    from tasks.runtime.secrets import install_redaction, redact_known_secrets

    cap_arenas()  # before any thread allocates: this process and every process it starts (tasks/runtime/arenas.py)
    install_redaction()
    try:
        app(standalone_mode=True)
    except CanaryError as exc:
        traceback_if_debug()
        typer.echo(redact_known_secrets(f"canary: {exc}"), err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # never a traceback for a user; CANARY_DEBUG=1 shows it
        if debug_enabled():
            raise
        line = f"canary: internal error: {type(exc).__name__}: {exc} (CANARY_DEBUG=1 for details)"
        typer.echo(redact_known_secrets(line), err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
