"""A small real database for admin-command tests: one complete round of six endpoints, three of them
suspended in enforce mode, built through the store's own writes (no flow run, no Prefect)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tasks import store
from tasks.core.types import EndpointState, Mode, RoundInfo
from tests.support import NO_EXCLUSIONS

MODEL = "meta-llama/llama-3.3-70b-instruct"
TAGS = ("deepinfra/fp8", "fireworks", "groq", "lambda/fp8", "novita", "together")
SUSPENDED = ("deepinfra/fp8", "groq", "novita")


def write_config(tmp: Path, *, db: Path | None = None, publish_dir: Path | None = None) -> Path:
    """A canary.toml in `tmp` naming the database and publish dir (no network is ever used)."""
    cfg = tmp / "canary.toml"
    cfg.write_text(
        f'models = ["{MODEL}"]\nmode = "enforce"\nbase_url = "http://127.0.0.1:9/api/v1"\n'
        f'db_path = "{db or tmp / "c.duckdb"}"\npublish_dir = "{publish_dir or tmp / "published"}"\n'
        f'exclusions_file = "{NO_EXCLUSIONS}"\n'
    )
    return cfg


def build_db(path: Path, *, now: datetime | None = None) -> datetime:
    """Create `path` with one complete round and SUSPENDED in enforce mode; returns the round time."""
    now = now or datetime.now(UTC).replace(microsecond=0)
    round_ts = now - timedelta(minutes=10)
    info = RoundInfo(round_id=f"r-{round_ts:%Y%m%dT%H%M}", model=MODEL, round_ts=round_ts, mode=Mode.ENFORCE)
    with store.open_store(path) as con:
        store.land_round(con, info, [], endpoints=list(TAGS), status="complete", finished_at=round_ts)
        base = EndpointState(model=MODEL, tag="", mode=Mode.ENFORCE)
        states = [
            replace(
                base,
                tag=t,
                suspended_until=now + timedelta(days=1) if t in SUSPENDED else None,
                suspended_at=round_ts if t in SUSPENDED else None,
                ladder_step=1 if t in SUSPENDED else 0,
            )
            for t in TAGS
        ]
        store.save_states(con, states)
        store.set_setting(con, store.MODE_KEY, "enforce", at=round_ts, who="test")
    return round_ts
