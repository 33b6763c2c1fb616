"""The admin's commands of `canary` (provider_canary/cli/main.py registers them): the ignore list, the operational
exclusion layer (`canary exclude add|remove|list`), `lift` and `mode`. Each is a thin shell over
provider_canary/cli/admin.py or provider_canary/cli/admin_read.py."""

from __future__ import annotations

from typing import Annotated

import typer

from provider_canary.cli.options import ConfigOpt, DbOpt, ExcludeModelOpt, JsonOpt, ModelOpt, WhoOpt

exclude_app = typer.Typer(
    help="The operational exclusion layer (effective at once, no deploy).", no_args_is_help=True
)


def ignore_list(
    config: ConfigOpt = None, model: ModelOpt = None, json_out: JsonOpt = False, db: DbOpt = None
) -> None:
    """The merged ignore list to put into OpenRouter's provider.ignore."""
    from provider_canary.cli.admin_read import ignore_list_command

    ignore_list_command(config=config, model=model, json_out=json_out, db=db)


@exclude_app.command("add")
def exclude_add(
    tag: str,
    reason: Annotated[str, typer.Option("--reason", help="why (shown in alerts and the ignore list)")],
    model: ExcludeModelOpt = None,
    until: Annotated[str | None, typer.Option("--until", help="ISO time or duration like 12h")] = None,
    who: WhoOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="add it even if the last discovery saw no such endpoint")
    ] = False,
    config: ConfigOpt = None,
    db: DbOpt = None,
) -> None:
    """Exclude an endpoint tag (or a provider slug) now, for every model unless --model (a tag the last
    full round's discovery did not see: --force)."""
    from provider_canary.cli.admin import exclude_add_command

    exclude_add_command(
        tag=tag, reason=reason, model=model, until=until, who=who, config=config, db=db, force=force
    )


@exclude_app.command("remove")
def exclude_remove(
    tag: str,
    model: Annotated[
        str | None,
        typer.Option("--model", help="the exclusion made for this model id (default: the one for every model)"),
    ] = None,
    reason: Annotated[str, typer.Option("--reason", help="why (kept in the exclusion's history)")] = (
        "removed by admin"
    ),
    who: WhoOpt = None,
    config: ConfigOpt = None,
    db: DbOpt = None,
) -> None:
    """Remove an operational exclusion now."""
    from provider_canary.cli.admin import exclude_remove_command

    exclude_remove_command(tag=tag, model=model, reason=reason, who=who, config=config, db=db)


@exclude_app.command("list")
def exclude_list(
    config: ConfigOpt = None, json_out: JsonOpt = False, history: bool = False, db: DbOpt = None
) -> None:
    """Active operational exclusions (--history: every change)."""
    from provider_canary.cli.admin_read import exclude_list_command

    exclude_list_command(config=config, json_out=json_out, history=history, db=db)


def lift(
    tag: str,
    reason: Annotated[str, typer.Option("--reason", help="why the suspension ends")],
    model: ModelOpt = None,
    who: WhoOpt = None,
    config: ConfigOpt = None,
    db: DbOpt = None,
) -> None:
    """End a canary suspension now."""
    from provider_canary.cli.admin import lift_command

    lift_command(tag=tag, reason=reason, model=model, who=who, config=config, db=db)


def mode(
    new_mode: Annotated[str, typer.Argument(metavar="observe|enforce")],
    config: ConfigOpt = None,
    db: DbOpt = None,
) -> None:
    """Switch between observe (would_* decisions only) and enforce."""
    from provider_canary.cli.admin import mode_command

    mode_command(new_mode=new_mode, config=config, db=db)
