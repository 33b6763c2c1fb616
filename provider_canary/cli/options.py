"""The options the `canary` commands share (provider_canary/cli/main.py, provider_canary/cli/admin_app.py): one
declaration, one help text."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="canary.toml (or CANARY_CONFIG)")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="model id (default: the first configured)")]
EveryModelOpt = Annotated[
    str | None, typer.Option("--model", help="only this model id (default: every configured model)")
]
ExcludeModelOpt = Annotated[
    str | None, typer.Option("--model", help="for this model id only (default: for every model)")
]
WhoOpt = Annotated[str | None, typer.Option("--who", help="who (default: $USER)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]
DbOpt = Annotated[str | None, typer.Option("--db", help="DuckDB file (default: config db_path or CANARY_DB)")]
