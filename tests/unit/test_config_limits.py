"""Config values that used to be accepted and did harm (issue 21): a model listed twice (its round ran twice
under one round id), numbers with no upper bound (`concurrency = 1e11`), a publish_dir that is a system
directory (`/` got `/.canary-db`), and a base_url carrying credentials. Each is one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.config.loading import INT_BOUNDS, config_from_mapping
from tests.unit.test_config import rejected

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def test_a_model_listed_twice_is_refused() -> None:
    message = rejected({"models": ["acme/x", "acme/y", "acme/x"]})
    assert "'acme/x' twice" in message
    assert config_from_mapping({"models": ["acme/x", "acme/y"]}).models == ("acme/x", "acme/y")


@pytest.mark.parametrize("key", sorted(INT_BOUNDS))
def test_every_integer_has_an_upper_bound(key: str) -> None:
    low, high = INT_BOUNDS[key]
    assert key in rejected({key: high + 1}) and str(high + 1) in rejected({key: high + 1})
    assert key in rejected({key: 10**11})
    assert key in rejected({key: low - 1})


def test_concurrency_1e11_is_refused_as_float_and_as_integer() -> None:
    assert "concurrency" in rejected({"concurrency": 1e11})
    assert "concurrency" in rejected({"concurrency": 100_000_000_000})
    assert "budget_usd_per_day" in rejected({"budget_usd_per_day": 1e11})


@pytest.mark.parametrize("path", ["/", "/etc", "/tmp", "/usr", "~", "/root/../"])
def test_a_system_or_home_publish_dir_is_refused(path: str) -> None:
    assert "publish_dir" in rejected({"publish_dir": path})


def test_a_publish_dir_of_its_own_is_accepted(tmp_path: Path) -> None:
    assert config_from_mapping({"publish_dir": str(tmp_path / "pub")}).publish_dir == str(tmp_path / "pub")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("line", "key", "secret"),
    [
        ('publish_dir = "/"', "publish_dir", None),
        ('models = ["acme/x", "acme/x"]', "models", None),
        ("concurrency = 100000000000", "concurrency", None),
        ('base_url = "http://user:pa55word-PLANTED@127.0.0.1:9/api/v1"', "base_url", "pa55word-PLANTED"),
    ],
    ids=["publish_dir-root", "models-twice", "concurrency-1e11", "base_url-userinfo"],
)
def test_canary_run_says_one_line_and_exits_2(tmp_path: Path, line: str, key: str, secret: str | None) -> None:
    config = tmp_path / "canary.toml"
    config.write_text(line + "\n", encoding="utf-8")
    env = {**os.environ, "CANARY_CONFIG": str(config), "OPENROUTER_API_KEY": "sk-or-v1-unused",
           "PREFECT_API_URL": "http://127.0.0.1:9/api", "PYTHONPATH": str(ROOT)}
    env.pop("OPENROUTER_BASE_URL", None)
    proc = subprocess.run([sys.executable, "-m", "provider_canary.cli.main", "run"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"canary: config: {key}"), proc.stderr
    if secret:
        assert secret not in proc.stderr + proc.stdout
        assert "user:pa55" not in proc.stderr
    assert not Path("/.canary-db").exists() or Path("/.canary-db").stat().st_mtime < config.stat().st_mtime
