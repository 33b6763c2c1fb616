"""Help texts tell what the commands do (issue 24): `run` runs a cycle of every model, `serve` serves the
canary-cycle deployment, `--model` says per command whether its default is one model or all, `--who` is
explained wherever it is taken, and every operator error line starts with the same `canary: ` prefix."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from provider_canary.cli.main import app

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def help_of(*cmd: str) -> str:
    result = CliRunner().invoke(app, [*cmd, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())  # one line, box drawing gone


def option_help(text: str, option: str) -> str:
    """The help of `option` up to the next option."""
    found = re.search(rf"{option} <[a-z]+> (.*?)(?= --[a-z-]+ <|$)", text)
    assert found, (option, text)
    return found.group(1)


def test_run_says_it_runs_a_cycle_of_every_model() -> None:
    text = help_of("run")
    assert "cycle" in text and "Run one round" not in text
    assert "every configured model" in option_help(text, "--model")
    assert "for this run only" in option_help(text, "--mode")


def test_serve_names_the_cycle_deployment() -> None:
    text = help_of("serve")
    assert "canary-cycle" in text and "canary-round" not in text and "one schedule per model" not in text


@pytest.mark.parametrize(
    ("cmd", "default"),
    [
        (("run",), "every configured model"),
        (("status",), "every configured model"),
        (("exclude", "add"), "every model"),
        (("exclude", "remove"), "every model"),
        (("lift",), "the first configured"),
        (("ignore-list",), "the first configured"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else v,
)
def test_model_option_says_its_default(cmd: tuple[str, ...], default: str) -> None:
    assert default in option_help(help_of(*cmd), "--model")


@pytest.mark.parametrize("cmd", [("lift",), ("exclude", "add"), ("exclude", "remove")], ids=" ".join)
def test_who_is_explained(cmd: tuple[str, ...]) -> None:
    assert "$USER" in option_help(help_of(*cmd), "--who")


def test_flow_runs_speed_is_the_readmes_figure() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    figure = re.search(r"--flow-runs.{0,200}?~(\d+)x slower", readme, flags=re.S)
    assert figure, "README names the --flow-runs figure"
    assert f"~{figure.group(1)}x slower" in option_help(help_of("demo"), "--flow-runs")


def run(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CANARY_DEBUG"}
    return subprocess.run([sys.executable, "-c", "from provider_canary.cli.main import main; main()", *args],
                          capture_output=True, text=True, cwd=tmp, env=env, timeout=60)


def test_every_error_line_starts_with_canary(tmp_path: Path) -> None:
    bad_fleet = tmp_path / "fleet.toml"
    bad_fleet.write_text("models = 3\n")
    for args in (
        ["replay", str(tmp_path / "missing.jsonl")],
        ["simulator", "--fleet", str(bad_fleet), "--port", "0"],
        ["status", "--config", str(tmp_path / "missing.toml")],
    ):
        proc = run(*args, tmp=tmp_path)
        assert proc.returncode == 2 and proc.stderr.startswith("canary: "), (args, proc.stderr)
        assert proc.stderr.count("\n") == 1, proc.stderr
