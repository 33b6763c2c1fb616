"""Config validation names the problem before anything starts (tasks/config/loading.py).

Every case of issue 11 that used to be accepted (and blinded the canary or failed 11-17 s later inside the
flow) is a ConfigError naming the key and the bad value; `preflight` checks the file system; the CLI prints
one line `canary: config: <key> ...` and exits 2.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from tasks.config import CanaryConfig, public_base_url
from tasks.config.loading import apply_overrides, config_from_mapping, load_config
from tasks.config.preflight import preflight
from tasks.errors import ConfigError
from tests.support import NO_EXCLUSIONS

pytestmark = pytest.mark.unit
KEYS = {f.name for f in fields(CanaryConfig)}
ROOT = Path(__file__).resolve().parents[2]


def rejected(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        config_from_mapping(raw)
    message = str(info.value)
    assert message.startswith("config: ") and "\n" not in message
    return message


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ({"probe_budget_s": math.inf}, ("probe_budget_s", "inf")),  # watchdog OverflowError, no end
        ({"probe_budget_s": math.nan}, ("probe_budget_s", "nan")),  # 53/60 attempts became transport
        ({"ttft_s": math.nan}, ("ttft_s", "nan")),  # every TTFT passed
        ({"ttft_s": 1e9}, ("ttft_s", "1e+09", "probe_budget_s")),
        ({"ttft_s": 61.0}, ("ttft_s", "61", "probe_budget_s (60)")),
        ({"ttft_s": 8, "probe_budget_s": 8}, ("ttft_s", "probe_budget_s")),  # equal: no time left to see text
        ({"read_timeout_s": 90}, ("read_timeout_s", "90", "probe_budget_s")),
        ({"connect_timeout_s": 61}, ("connect_timeout_s", "61", "probe_budget_s")),
        ({"connect_timeout_s": -1.0}, ("connect_timeout_s", "-1")),
        ({"read_timeout_s": math.inf}, ("read_timeout_s", "inf")),
        ({"ladder": ["0s"]}, ("ladder", "'0s'", "interval_min")),  # 18 Slack messages in 3 rounds
        ({"ladder": [-1]}, ("ladder", "-1")),
        ({"ladder": ["20m", "1d"]}, ("ladder", "'20m'", "30m")),
        ({"ladder": ["1h"], "interval_min": 120}, ("ladder", "'1h'", "2h")),
        ({"ladder": [math.inf]}, ("ladder", "inf")),
        ({"ladder": [math.nan]}, ("ladder", "nan")),
        ({"ladder_decay": math.nan}, ("ladder_decay", "nan")),
        ({"ladder_decay": -2}, ("ladder_decay",)),
        ({"db_path": ""}, ("db_path", "''")),
        ({"db_path": "   "}, ("db_path",)),
        ({"publish_dir": ""}, ("publish_dir",)),
        ({"exclusions_file": ""}, ("exclusions_file",)),
        ({"probe_budget_s": 3600}, ("probe_budget_s", "interval_min")),  # longer than a round interval
        ({"interval_min": 0}, ("interval_min",)),
        ({"models": ["meta-llama/llama-3.3\n"]}, ("models", "'meta-llama/llama-3.3\\n'")),  # a newline at its end
        ({"models": ["meta-llama/llama\n-3.3"]}, ("models", "\\n")),
        ({"models": ["meta-llama/llama\t3.3"]}, ("models", "\\t")),
        ({"models": ["meta-llama/llama\x1b3.3"]}, ("models", "\\x1b")),
        ({"models": ["meta-llama/llama\u00a03.3"]}, ("models", "\\xa0")),  # a no-break space
        ({"models": ["meta-llama/llama 3.3"]}, ("models",)),
        ({"models": ["/llama"]}, ("models",)),
    ],
)
def test_rejected(raw: dict[str, Any], names: tuple[str, ...]) -> None:
    message = rejected(raw)
    first_key = message.removeprefix("config: ").split()[0]
    assert first_key in KEYS, message
    for name in names:
        assert name in message, message


def test_defaults_and_the_shipped_file_are_accepted() -> None:
    assert config_from_mapping({}) == CanaryConfig()
    assert load_config(ROOT / "canary.toml", env={}).probe_budget_s == 60


def test_unset_timeouts_follow_a_smaller_budget() -> None:
    cfg = config_from_mapping({"ttft_s": 1, "probe_budget_s": 8})
    assert (cfg.connect_timeout_s, cfg.read_timeout_s, cfg.probe_budget_s) == (8, 8, 8)
    again = apply_overrides(CanaryConfig(), {"ttft_s": "1", "probe_budget_s": "8"})  # `--set` strings
    assert again == cfg
    message = rejected({"ttft_s": 1, "probe_budget_s": 8, "read_timeout_s": 9})
    assert message.startswith("config: read_timeout_s")


def test_overrides_are_validated_like_the_file() -> None:
    for key, value in (("probe_budget_s", "nan"), ("ttft_s", "inf"), ("ladder", "0s"), ("db_path", "")):
        with pytest.raises(ConfigError, match=f"^config: {key}"):
            apply_overrides(CanaryConfig(), {key: value})


def test_a_toml_file_with_inf_or_nan_is_rejected_on_load(tmp_path: Path) -> None:
    for line in ("probe_budget_s = inf", "probe_budget_s = nan", "ttft_s = nan", 'ladder = ["0s"]'):
        path = tmp_path / "c.toml"
        path.write_text(line + "\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="^config: (probe_budget_s|ttft_s|ladder) "):
            load_config(path, env={})


def test_a_base_url_password_is_refused_and_never_shown() -> None:
    """httpx would send user:password as Basic auth in place of the OpenRouter key (issue 21)."""
    message = rejected({"base_url": "http://user:s3cret-pw@gw.example:8080/api/v1/"})
    assert "s3cret-pw" not in message and "credentials" in message and "gw.example:8080" in message
    cfg = config_from_mapping({"base_url": "http://gw.example:8080/api/v1/"})
    assert cfg.base_url == public_base_url(cfg) == "http://gw.example:8080/api/v1"
    message = rejected({"base_url": "ftp://user:s3cret-pw@gw.example/"})
    assert "s3cret-pw" not in message and "base_url" in message


# --- preflight ------------------------------------------------------------------------------------
def ok_paths(tmp_path: Path) -> CanaryConfig:
    return CanaryConfig(
        db_path=str(tmp_path / "db" / "c.duckdb"),
        publish_dir=str(tmp_path / "pub"),
        exclusions_file=NO_EXCLUSIONS,
    )


def test_preflight_accepts_paths_it_can_create_and_creates_nothing(tmp_path: Path) -> None:
    preflight(ok_paths(tmp_path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"publish_dir": "FILE/pub"}, "config: publish_dir"),
        ({"publish_dir": "/proc/canary-published"}, "config: publish_dir"),  # read-only even for root
        ({"db_path": "FILE/c.duckdb"}, "config: db_path"),
        ({"db_path": "DIR"}, "config: db_path"),
        ({"db_path": "/proc/canary/c.duckdb"}, "config: db_path"),
        ({"exclusions_file": "BAD"}, "config: exclusions_file"),
    ],
)
def test_preflight_rejects(tmp_path: Path, change: dict[str, str], expected: str) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    (tmp_path / "bad.toml").write_text("[[exclusion]]\nnot = [valid\n", encoding="utf-8")
    where = {"FILE": str(tmp_path / "file"), "DIR": str(tmp_path), "BAD": str(tmp_path / "bad.toml")}
    resolved = {}
    for key, value in change.items():
        head, _, rest = value.partition("/")
        resolved[key] = (os.path.join(where[head], rest) if rest else where[head]) if head in where else value
    with pytest.raises(ConfigError) as info:
        preflight(replace(ok_paths(tmp_path), **resolved))
    assert str(info.value).startswith(expected), info.value


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any directory")
def test_preflight_rejects_an_unwritable_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ConfigError, match="^config: publish_dir"):
        preflight(replace(ok_paths(tmp_path), publish_dir=str(locked / "pub")))


@pytest.mark.integration
@pytest.mark.parametrize("command", [["run"], ["serve"], ["demo", "--db", "/proc/canary/demo.duckdb"]])
def test_the_cli_says_one_line_and_exits_2_before_anything_starts(tmp_path: Path, command: list[str]) -> None:
    config = tmp_path / "canary.toml"
    config.write_text('publish_dir = "/proc/canary-published"\n', encoding="utf-8")
    env = {
        **os.environ,
        "CANARY_CONFIG": str(config),
        "OPENROUTER_API_KEY": "sk-or-v1-unused",
        "PREFECT_API_URL": "http://127.0.0.1:9/api",  # nothing may reach Prefect
    }
    proc = subprocess.run(
        [sys.executable, "-m", "provider_canary.cli.main", *command],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canary: config: "), proc.stderr
    assert ("publish_dir" if command[0] != "demo" else "db_path") in lines[0]
