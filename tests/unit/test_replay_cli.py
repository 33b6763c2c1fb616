"""`canary replay` (provider_canary/cli/replay_cmd.py) through Typer: JSON lines, text, `--set` variants and their
summaries, one-line errors with exit 2, stdin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from provider_canary.cli.replay_cmd import replay_command
from tests.support.replay_lines import DATA, line

pytestmark = pytest.mark.unit




# -- the CLI command -----------------------------------------------------------------------------------------
app = typer.Typer()
app.command("replay")(replay_command)


@app.command("other")
def _other() -> None:  # a second command keeps Typer in multi-command mode, as in provider_canary/cli/main.py
    """Unused."""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "canary.toml"
    path.write_text('mode = "enforce"\n')
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["replay", *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_json_lines(config: Path) -> None:
    code, out, err = invoke(str(DATA / "replay_basic.jsonl"), "--config", str(config), "--json")
    assert code == 0
    assert out == (DATA / "replay_basic_expected.jsonl").read_text()
    assert err.splitlines()[0].startswith("setting") and err.splitlines()[1].startswith("baseline")


def test_cli_text_and_set_override(config: Path) -> None:
    code, out, _ = invoke(
        str(DATA / "replay_basic.jsonl"),
        "--config",
        str(config),
        "--set",
        "min_hosts=0",
        "--set",
        "mode=observe",
    )
    assert code == 0
    rows = out.splitlines()
    assert rows[0] == (
        "2026-11-01T10:30:00Z  m/a  deepinfra/fp8  would_suspend  until=2026-11-02T10:30:00Z  step=1"
    )
    assert not any("floor_blocked" in r for r in rows)


def test_cli_summary_with_variants(config: Path) -> None:
    code, out, _ = invoke(
        str(DATA / "replay_basic.jsonl"),
        "--config",
        str(config),
        "--summary",
        "--json",
        "--compare",
        "fail_rounds=3",
        "--compare",
        "min_hosts=0 restore_rounds=1",
    )
    assert code == 0
    rows = [json.loads(r) for r in out.splitlines()]
    assert [r["label"] for r in rows] == ["baseline", "fail_rounds=3", "min_hosts=0 restore_rounds=1"]
    assert rows[0]["suspensions"] == 5 and rows[0]["suspended_endpoint_hours"] == 74.0


def test_cli_summary_labels_the_set_row_with_its_overrides_not_baseline(config: Path) -> None:
    """`--set k=v --summary` replays the changed setting: its row says so (issue 30: it said "baseline"), and each
    --compare row names every override it ran with."""
    plain = [json.loads(r) for r in invoke(str(DATA / "replay_basic.jsonl"), "--config", str(config),
                                           "--summary", "--json")[1].splitlines()]
    code, out, _ = invoke(str(DATA / "replay_basic.jsonl"), "--config", str(config), "--set", "fail_rounds=3",
                          "--summary", "--json", "--compare", "min_hosts=0")
    assert code == 0
    rows = [json.loads(r) for r in out.splitlines()]
    assert [r["label"] for r in plain] == ["baseline"]
    assert [r["label"] for r in rows] == ["fail_rounds=3", "fail_rounds=3 min_hosts=0"]
    assert rows[0]["suspensions"] != plain[0]["suspensions"]  # it is another setting, not the baseline
    _, _, err = invoke(str(DATA / "replay_basic.jsonl"), "--config", str(config), "--set", "fail_rounds=3")
    assert err.splitlines()[1].startswith("fail_rounds=3 ")  # the table after the decisions, on stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([str(DATA / "replay_bad_status.jsonl")], "replay: line 3: status must be one of"),
        (["/nonexistent/rounds.jsonl"], "replay: file /nonexistent/rounds.jsonl not found"),
        ([str(DATA / "replay_basic.jsonl"), "--set", "fail_rounds=zero"], "config: fail_rounds must be"),
        ([str(DATA / "replay_basic.jsonl"), "--set", "nope"], "--set expects key=value"),
        ([str(DATA / "replay_basic.jsonl"), "--compare", "bogus=1"], "config: unknown key 'bogus'"),
        (
            [str(DATA / "replay_basic.jsonl"), "--config", "/nonexistent.toml"],
            "config: file /nonexistent.toml",
        ),
    ],
)
def test_cli_errors_are_one_line_exit_2(args: list[str], message: str, config: Path) -> None:
    if "--config" not in args:
        args = [*args, "--config", str(config)]
    code, out, err = invoke(*args)
    assert code == 2 and out == ""
    assert err.startswith(f"canary: {message}") and err.count("\n") == 1 and "Traceback" not in err


def test_cli_reads_stdin(config: Path) -> None:
    text = "\n".join(line(ts, t, "fail" if t == "x" else "clean") for ts in ("10:00", "10:30") for t in "xyz")
    result = CliRunner().invoke(app, ["replay", "-", "--config", str(config), "--json"], input=text)
    assert result.exit_code == 0
    assert [json.loads(r)["action"] for r in result.stdout.splitlines()] == ["suspend"]
