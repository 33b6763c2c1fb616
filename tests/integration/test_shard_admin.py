"""Admin commands on a shard (docs/operations.md 2c): every shard shares one canary.toml, whose `models` are not
the shard's, so `--db <shard>` takes the models from the database itself. Real databases built through the
store's own writes, the real command (CliRunner), no Prefect."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from provider_canary.cli.main import app
from tasks import store
from tasks.core.types import Mode, RoundInfo
from tests.support.admin_db import MODEL, build_db, write_config

pytestmark = pytest.mark.integration
SHARD_MODELS = ("acme/shard-b-1", "acme/shard-b-2")


def shard_db(path: Path) -> None:
    """A shard's file: a complete round of each of its own models, none of which canary.toml lists."""
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    with store.open_store(path) as con:
        for m in SHARD_MODELS:
            info = RoundInfo(f"{m}@{at:%Y%m%dT%H%M}", m, at, Mode.ENFORCE)
            store.land_round(con, info, [], endpoints=["alpha", "beta"], status="complete", finished_at=at)


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_status_of_a_shard_shows_its_own_models_not_the_configs(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    build_db(tmp_path / "c.duckdb")
    shard = tmp_path / "shard-b.duckdb"
    shard_db(shard)

    report = json.loads(run("status", "--config", str(cfg), "--db", str(shard), "--json"))
    assert sorted({e["model"] for e in report["endpoints"]}) == list(SHARD_MODELS)
    assert sorted({r["model"] for r in report["rounds"]}) == list(SHARD_MODELS)
    text = run("status", "--config", str(cfg), "--db", str(shard))
    assert all(m in text for m in SHARD_MODELS) and MODEL not in text
    # without --db: the config's own database and models, as before
    own = json.loads(run("status", "--config", str(cfg), "--json"))
    assert {e["model"] for e in own["endpoints"]} == {MODEL}


def test_a_shards_model_is_known_to_the_commands_given_its_file(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    shard = tmp_path / "shard-b.duckdb"
    shard_db(shard)
    listed = json.loads(run("ignore-list", "--config", str(cfg), "--db", str(shard), "--model", SHARD_MODELS[1],
                            "--json"))
    assert listed["model"] == SHARD_MODELS[1]
    refused = CliRunner().invoke(app, ["ignore-list", "--config", str(cfg), "--model", SHARD_MODELS[1], "--json"])
    assert "unknown model" in str(refused.exception)  # not a model of the config's database
