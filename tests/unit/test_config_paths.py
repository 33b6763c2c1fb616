"""Paths in canary.toml are read against the file, not the working directory (tasks/config/loading.py,
tasks/core/paths.py); a named exclusions file that is missing is one line, exit 2; with no `exclusions_file` the
reviewed built-in layer is the package's own `tasks/exclusions.toml`, found from any directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tasks.config import CanaryConfig
from tasks.config.loading import load_config
from tasks.core.exclusions import load_builtin, parse_builtin
from tasks.errors import ConfigError
from tasks.ignore_list.publish import publish_dir

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def _file(where: Path, text: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "reviewed.toml").write_text("", encoding="utf-8")
    path = where / "canary.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_relative_paths_are_read_against_the_file_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    etc = tmp_path / "etc"
    path = _file(etc, 'db_path = "state/c.duckdb"\npublish_dir = "lists"\nexclusions_file = "reviewed.toml"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = load_config(path, env={})
    assert cfg.db_path == str(etc / "state" / "c.duckdb")
    assert cfg.publish_dir == str(etc / "lists") and publish_dir(cfg) == etc / "lists"
    assert cfg.exclusions_file == str(etc / "reviewed.toml")
    monkeypatch.chdir(tmp_path)  # a relative --config: still the file's directory, not the working one
    assert load_config(Path("etc/canary.toml"), env={}).db_path == str(etc / "state" / "c.duckdb")


def test_absolute_paths_stay_and_a_tilde_expands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "reviewed").mkdir(parents=True)
    (home / "reviewed" / "x.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    path = _file(tmp_path / "etc", f'db_path = "{tmp_path}/abs.duckdb"\nexclusions_file = "~/reviewed/x.toml"\n'
                                   'publish_dir = "~/lists"\n')
    cfg = load_config(path, env={})
    assert cfg.db_path == f"{tmp_path}/abs.duckdb"
    assert cfg.exclusions_file == str(home / "reviewed" / "x.toml") and cfg.publish_dir == str(home / "lists")


def test_the_environment_and_the_command_line_stay_relative_to_the_working_directory(tmp_path: Path) -> None:
    path = _file(tmp_path / "etc", 'db_path = "c.duckdb"\n')
    assert load_config(path, env={"CANARY_DB": "mine.duckdb"}).db_path == "mine.duckdb"


def test_a_named_exclusions_file_that_is_missing_is_one_line(tmp_path: Path) -> None:
    path = _file(tmp_path / "etc", 'exclusions_file = "gone.toml"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert str(info.value) == (f"config: exclusions_file: {tmp_path / 'etc' / 'gone.toml'} does not exist "
                               f"(a relative path is read against the directory of {path})")
    with pytest.raises(ConfigError, match="not found"):  # a config built in code: the reader refuses too
        load_builtin(CanaryConfig(exclusions_file=str(tmp_path / "gone.toml")).exclusions_file)


def test_the_cli_refuses_a_missing_exclusions_file_with_exit_2(tmp_path: Path) -> None:
    path = _file(tmp_path / "etc", 'exclusions_file = "gone.toml"\n')
    proc = subprocess.run([sys.executable, "-m", "provider_canary.cli.main", "ignore-list", "--config", str(path)],
                          cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"canary: config: exclusions_file: {tmp_path / 'etc' / 'gone.toml'} does not exist (a relative path is read "
        f"against the directory of {path})"]


def test_without_the_key_the_built_in_layer_is_the_packages_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no canary.toml, no exclusions.toml here: not a checkout
    cfg = load_config(env={})
    shipped = ROOT / "tasks" / "exclusions.toml"
    assert Path(cfg.exclusions_file) == shipped
    text = shipped.read_text(encoding="utf-8")
    assert load_builtin(cfg.exclusions_file) == parse_builtin(text, str(shipped))
    path = _file(tmp_path / "etc", 'db_path = "c.duckdb"\n')  # a file that does not name one: the same
    assert load_config(path, env={}).exclusions_file == cfg.exclusions_file


def test_preflight_refuses_a_missing_exclusions_file_named_anywhere(tmp_path: Path) -> None:
    from tasks.config.preflight import preflight

    cfg = CanaryConfig(db_path=str(tmp_path / "c.duckdb"), publish_dir=str(tmp_path / "pub"),
                       exclusions_file=str(tmp_path / "gone.toml"))
    with pytest.raises(ConfigError) as info:
        preflight(cfg)
    assert str(info.value) == f"config: exclusions_file: {tmp_path / 'gone.toml'} does not exist"
