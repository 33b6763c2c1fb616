"""`canary run`: one round per model now, each a Prefect flow run, after a preflight that turns a bad config,
a missing key, an unknown model or an unreachable base URL into one clear line (exit 2) instead of a failed
flow run with a traceback.

The flow runs go to the configured Prefect API (PREFECT_API_URL, its /health checked after the preflight) or to
one private server that `cli.prefect_server.prefect_api()` starts right after the config checks, so that its
start-up overlaps the preflight's network calls and the flow's imports, and that dies with this process even
under SIGKILL."""

from __future__ import annotations

from pathlib import Path

import httpx
import typer

from tasks.config import CanaryConfig, load_config, public_base_url
from tasks.config import preflight as preflight_paths
from tasks.errors import ConfigError
from tasks.secrets import read_secret


def resolve_cli_config(config: Path | None, *, db: str | None = None, **overrides: object) -> CanaryConfig:
    cfg = load_config(config)
    extra = {k: v for k, v in overrides.items() if v is not None}
    if db:
        extra["db_path"] = db
    return cfg.with_overrides(extra) if extra else cfg


def require_database(cfg: CanaryConfig) -> None:
    """Admin and read commands work on an existing database only: a mistyped --db or CANARY_DB must not
    quietly create an empty one (and then publish its empty ignore list)."""
    path = Path(cfg.db_path).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"no database at {path.resolve()}: create one with `canary run` (or `canary demo`, which leaves"
            " demo.duckdb), or point --db / CANARY_DB at an existing file"
        )


def preflight(cfg: CanaryConfig, models: list[str]) -> None:
    """Fail fast, in one line, before a flow run starts."""
    from tasks.discover import fetch_endpoints

    key = read_secret("OPENROUTER_API_KEY", required=True)
    assert key is not None
    with httpx.Client(timeout=httpx.Timeout(cfg.read_timeout_s, connect=cfg.connect_timeout_s)) as client:
        for model in models:
            if not fetch_endpoints(client, cfg.base_url, key.get(), model):
                raise ConfigError(f"config: model {model!r} has no endpoints at {public_base_url(cfg)}")


def run_once(
    *, config: Path | None, model: str | None, base_url: str | None, mode: str | None, db: str | None
) -> None:
    cfg = resolve_cli_config(config, db=db, base_url=base_url, mode=mode)
    models = [model] if model else list(cfg.models)
    preflight_paths(cfg)
    from cli.prefect_server import prefect_api

    with prefect_api() as api:  # a private server starts now, in parallel with the next two lines
        preflight(cfg, models)
        import flows.round  # noqa: F401  (the flow's imports, also while the server starts)

        api.wait_ready()
        run_rounds(cfg, models, config=config, mode=mode)


def run_rounds(cfg: CanaryConfig, models: list[str], *, config: Path | None, mode: str | None) -> None:
    """The flow runs of one `canary run`, against the Prefect API `run_once` provides."""
    from flows.round import canary_round

    for m in models:
        summary = canary_round(
            model=m,
            mode=mode,
            config_path=str(config) if config else None,
            base_url=public_base_url(cfg),  # never the userinfo: the flow restores it (tasks.config)
            db_path=cfg.db_path,
        )
        typer.echo(
            f"{summary['round_id']}: {summary['endpoints']} endpoints, {summary['attempts']} attempts, "
            f"decisions {summary['decisions'] or 'none'}, ignore {summary['ignore']}"
        )
