"""A canary.toml for `canary run` in a subprocess against the loopback simulator: one model, English only, the
database, publish dir and (absent) builtin exclusions where the test says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import NO_EXCLUSIONS


def write_run_config(sim: Any, where: Path, db: Path, model: str, *, ttft_s: float) -> Path:
    cfg = where / "canary.toml"
    cfg.write_text(
        f'models = ["{model}"]\nbase_url = "{sim.base_url}"\ndb_path = "{db}"\nlanguages = ["en"]\n'
        f'publish_dir = "{where}/published"\nexclusions_file = "{NO_EXCLUSIONS}"\nttft_s = {ttft_s}\n'
    )
    return cfg
